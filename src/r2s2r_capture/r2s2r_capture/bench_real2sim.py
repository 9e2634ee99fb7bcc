"""Benchmark of real2sim against the emulated hardware's ground truth.

    python -m r2s2r_capture.bench_real2sim [--profile P | --random-profile SEED] --out out/bench_real2sim.json

Captures from the emulator (:func:`r2s2r_capture.capture.capture_emulated`) with a hardware profile, runs
:func:`r2s2r_capture.real2sim.real2sim` (which never reads the profile), then compares with the profile and
the emulated scene: intrinsics (px), reprojection error (px), camera pose (mm, deg), per-object position
and size (mm), per-parameter identification error (%), and joint-tracking RMSE on a held-out excitation
(another seed, its own bag) replayed with :func:`r2s2r_capture.resim.resim` in the template world (before)
and in the identified world (after).

Joint damping and servo kv act alike on positions; the reported efforts split them (see
:mod:`r2s2r_capture.real2sim`).  The benchmark scores each, and their sum ("viscous").

``--random-profile SEED`` writes a random profile next to the output, drawn from these ranges (multiples
are of the sim world's values; the rest is the default profile's):

=======================  ==============================================
servo kp, kv             x U(0.85, 1.15)
joint damping            x U(0.8, 1.6)
joint armature           x U(0.9, 1.4)
friction loss (N m)      U(0.05, 0.4) shoulder/elbow, U(0.03, 0.15) wrists
command latency (s)      U(0.01, 0.05)
fx, fy (px)              U(590, 625); cx, cy: centre + U(-6, 6)
k1, k2, p1, p2, k3       U(-0.08, -0.02), U(0, 0.08), U(-1e-3, 1e-3) x2, U(-0.03, 0)
camera position (m)      sim + U(-0.02, 0.02) per axis; rpy sim + U(-0.02, 0.02) rad
cube half size (m)       U(0.019, 0.022); bin: position sim + U(-0.02, 0.02), yaw U(-0.1, 0.1)
=======================  ==============================================
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from r2s2r_sim.hardware_profiles import profile_path

__all__ = ["TARGETS", "compare", "main", "random_profile", "run_bench"]

DEFAULT_PROFILE = profile_path()
IDEAL_PROFILE = profile_path("ideal")  # the base of random profiles
ARM = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
TARGETS = {
    "camera_position_mm": 5.0,
    "camera_rotation_deg": 0.5,
    "object_position_mm": 10.0,
    "object_size_mm": 10.0,
    "sysid_param_pct": 10.0,
    "rmse_reduction_x": 5.0,
}
# Sim world values (scene.xml, robot/arm6.xml) the random ranges are multiples of.
_SIM_SERVO = {
    "shoulder_pan": (1000, 100),
    "shoulder_lift": (1500, 150),
    "elbow": (1000, 100),
    "wrist_1": (300, 30),
    "wrist_2": (300, 30),
    "wrist_3": (200, 20),
}
_SIM_JOINT = {n: ((1.0, 0.1) if n in ARM[:3] else (0.5, 0.05)) for n in ARM}
_LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def random_profile(seed: int, out: str | Path, *, realistic: bool = False) -> Path:
    """Write a random hardware profile (ranges in the module docstring) to ``out``.

    ``realistic`` adds every sensor, arm and contact effect, drawn by
    :func:`r2s2r_sim.effect_sampling.random_effect_sections` from its documented ranges.
    """
    rng = np.random.default_rng(seed)
    doc = yaml.safe_load(IDEAL_PROFILE.read_text(encoding="utf-8"))
    doc["name"] = f"arm6-random-{seed}"
    phys = doc["physics"]
    for n in ARM:
        kp, kv = _SIM_SERVO[n]
        phys["servos"][n] = {
            "kp": float(kp * rng.uniform(0.85, 1.15)),
            "kv": float(kv * rng.uniform(0.85, 1.15)),
        }
        d, a = _SIM_JOINT[n]
        fl = rng.uniform(0.05, 0.4) if n in ARM[:3] else rng.uniform(0.03, 0.15)
        phys["joints"][n] = {
            "damping": float(d * rng.uniform(0.8, 1.6)),
            "armature": float(a * rng.uniform(0.9, 1.4)),
            "frictionloss": float(fl),
        }
    doc["driver"]["command_latency_s"] = float(rng.uniform(0.01, 0.05))
    cam = doc["camera"]
    cam["intrinsics"] = {
        "fx": float(rng.uniform(590, 625)),
        "fy": float(rng.uniform(590, 625)),
        "cx": float(319.5 + rng.uniform(-6, 6)),
        "cy": float(239.5 + rng.uniform(-6, 6)),
    }
    cam["distortion"] = {
        "model": "plumb_bob",
        "k1": float(rng.uniform(-0.08, -0.02)),
        "k2": float(rng.uniform(0.0, 0.08)),
        "p1": float(rng.uniform(-1e-3, 1e-3)),
        "p2": float(rng.uniform(-1e-3, 1e-3)),
        "k3": float(rng.uniform(-0.03, 0.0)),
    }
    cam["pose"] = {
        "position": [float(v + rng.uniform(-0.02, 0.02)) for v in (1.2, 0.1, 1.35)],
        "rpy": [float(v + rng.uniform(-0.02, 0.02)) for v in (0.0, 0.5075, 3.1416)],
    }
    h = float(rng.uniform(0.019, 0.022))
    doc["objects"]["cube"] = {
        "pose": {"position": [0.45, -0.05, 0.75 + h], "rpy": [0, 0, 0]},
        "geom_sizes": {"cube_geom": [h, h, h]},
    }
    doc["objects"]["bin"] = {
        "pose": {
            "position": [
                float(0.25 + rng.uniform(-0.02, 0.02)),
                float(0.38 + rng.uniform(-0.02, 0.02)),
                0.75,
            ],
            "rpy": [0, 0, float(rng.uniform(-0.1, 0.1))],
        }
    }
    if realistic:
        from r2s2r_sim.effect_sampling import random_effect_sections

        doc.update(
            random_effect_sections(
                rng,
                arm_joints=ARM,
                wrist_joints=ARM[3:],
                pad_geoms=("left_finger_geom", "right_finger_geom"),
                objects=("cube",),
            )
        )
    path = Path(out)
    path.write_text(f"# random profile, seed {seed} (r2s2r_capture.bench_real2sim)\n" + yaml.safe_dump(doc))
    return path


def _rot_deg(R: np.ndarray) -> float:
    return math.degrees(math.acos(float(np.clip((np.trace(R) - 1) / 2, -1.0, 1.0))))


def _pct(value: float, truth: float) -> float:
    return 100.0 * abs(value - truth) / abs(truth) if truth else float("inf")


def compare(result: Any, profile: Any, truth: dict[str, Any]) -> dict[str, Any]:
    """Errors of a :class:`~r2s2r_capture.real2sim.Real2SimResult` against the profile and scene truth."""
    intr = profile.camera.intrinsics
    K = result.K
    cam_R = profile.camera.pose.matrix() @ _LINK_TO_OPTICAL
    cam_p = np.array(profile.camera.pose.position)
    T = result.T_world_camera
    out: dict[str, Any] = {
        "intrinsics_px": {
            "fx": abs(K[0, 0] - intr.fx),
            "fy": abs(K[1, 1] - intr.fy),
            "cx": abs(K[0, 2] - intr.cx),
            "cy": abs(K[1, 2] - intr.cy),
        },
        "reprojection_px": {"intrinsics": result.intrinsics_rms_px, "extrinsics": result.extrinsics_rms_px},
        "camera_position_mm": 1000 * float(np.linalg.norm(T[:3, 3] - cam_p)),
        "camera_rotation_deg": _rot_deg(T[:3, :3].T @ cam_R),
    }
    roles = {"task object": "cube", "target": "bin"}
    objects = {}
    for name, o in result.objects.items():
        body = roles.get(o["role"])
        if body is None or body not in truth["objects"]:
            continue
        tr = truth["objects"][body]
        size, tsize = np.array(o["size"]), np.array(tr["size"])
        size_err = np.abs(np.concatenate([np.sort(size[:2]) - np.sort(tsize[:2]), [size[2] - tsize[2]]]))
        objects[body] = {
            "reconstructed": name,
            "position_mm": 1000 * float(np.linalg.norm(np.array(o["position"]) - np.array(tr["position"]))),
            "size_mm": 1000 * float(size_err.max()),
        }
    out["objects"] = objects
    fitted, nominal = result.sysid["fitted"], result.sysid["nominal"]
    phys = profile.physics
    params: dict[str, dict[str, float]] = {}
    for n in ARM:
        servo, joint = phys.servos.get(n), phys.joints.get(n)
        d_true = joint.damping if joint and joint.damping is not None else _SIM_JOINT[n][0]
        d_nom = _SIM_JOINT[n][0]
        kv_true = servo.kv if servo else _SIM_SERVO[n][1]
        truths = {
            "kp": servo.kp if servo else _SIM_SERVO[n][0],
            "kv": kv_true,
            "damping": d_true,
            "viscous": kv_true + d_true,
            "armature": joint.armature if joint and joint.armature is not None else _SIM_JOINT[n][1],
            "frictionloss": joint.frictionloss if joint and joint.frictionloss is not None else 0.0,
        }
        values = {
            "kp": fitted.get(f"{n}/kp", nominal.get(f"{n}/kp", float("nan"))),
            "kv": fitted.get(f"{n}/kv", float("nan")),
            "damping": fitted.get(f"{n}/damping", d_nom),
            "viscous": fitted.get(f"{n}/kv", float("nan")) + fitted.get(f"{n}/damping", d_nom),
            "armature": fitted.get(f"{n}/armature", float("nan")),
            "frictionloss": fitted.get(f"{n}/frictionloss", float("nan")),
        }
        for kind, tv in truths.items():
            params[f"{n}/{kind}"] = {"truth": tv, "fitted": values[kind], "error_pct": _pct(values[kind], tv)}
    lat = profile.driver.command_latency_s
    params["command_delay_s"] = {
        "truth": lat,
        "fitted": fitted.get("command_delay_s", 0.0),
        "error_pct": _pct(fitted.get("command_delay_s", 0.0), lat),
    }
    out["sysid"] = params
    return out


def run_bench(
    profile_path: str | Path,
    *,
    work: Path,
    max_iters: int = 30,
    quick: bool = False,
    duration_s: float | None = None,
    max_velocity: float | None = None,
    n_harmonics: int | None = None,
    progress: Any = print,
) -> dict[str, Any]:
    """Capture, real2sim, held-out resim; returns the report (errors, targets, wall times).

    ``duration_s`` (default: 6 s quick, else the capture default), ``max_velocity`` (rad/s) and
    ``n_harmonics`` override the capture's default excitation trajectory
    (:class:`~r2s2r_capture.capture.CaptureConfig`).
    """
    from r2s2r_sim.emulated_hardware import load_hardware_profile

    from r2s2r_capture.capture import CaptureConfig, capture_emulated
    from r2s2r_capture.real2sim import Real2SimConfig, real2sim
    from r2s2r_capture.resim import resim

    profile = load_hardware_profile(profile_path)
    exc = CaptureConfig().excitation
    exc = dataclasses.replace(
        exc,
        duration_s=duration_s if duration_s is not None else (6.0 if quick else exc.duration_s),
        max_velocity=max_velocity if max_velocity is not None else exc.max_velocity,
        n_harmonics=n_harmonics if n_harmonics is not None else exc.n_harmonics,
    )
    wall: dict[str, float] = {}
    t0 = time.perf_counter()
    cap = capture_emulated(
        work / "capture",
        profile=profile_path,
        config=CaptureConfig(n_intrinsics_views=8 if quick else 12, excitation=exc),
        progress=progress,
    )
    held = capture_emulated(
        work / "heldout",
        profile=profile_path,
        config=CaptureConfig(
            n_intrinsics_views=0, known_board_poses=(), n_scene_frames=0, excitation=exc, seed=1
        ),
    )
    wall["capture"] = time.perf_counter() - t0
    result = real2sim(
        [cap.bag],
        work / "world",
        config=Real2SimConfig(max_iters=max_iters, report=not quick),
        progress=progress,
    )
    for k, v in result.stage_s.items():
        wall[f"real2sim.{k}"] = v
    t1 = time.perf_counter()
    before = resim(held.bag, "tabletop-pick-v1").stats()
    after = resim(held.bag, result.world_dir).stats()
    wall["resim"] = time.perf_counter() - t1
    report = compare(result, profile, cap.truth)
    report["tracking_heldout_rmse_rad"] = {
        "before": before["joint_rmse"],
        "after": after["joint_rmse"],
        "reduction_x": before["joint_rmse"] / max(after["joint_rmse"], 1e-12),
        "ee_before_mm": 1000 * before["ee_rmse_m"],
        "ee_after_mm": 1000 * after["ee_rmse_m"],
        "sysid_validation_before": result.sysid["rms_val_before"],
        "sysid_validation_after": result.sysid["rms_val_after"],
    }
    report["profile"] = str(profile_path)
    report["targets"] = TARGETS
    report["wall_s"] = wall
    report["pass"] = _passes(report)
    return report


def _passes(r: dict[str, Any]) -> dict[str, bool]:
    sysid = [v["error_pct"] for v in r["sysid"].values()]
    return {
        "camera_position": r["camera_position_mm"] <= TARGETS["camera_position_mm"],
        "camera_rotation": r["camera_rotation_deg"] <= TARGETS["camera_rotation_deg"],
        "object_position": all(
            o["position_mm"] <= TARGETS["object_position_mm"] for o in r["objects"].values()
        )
        and len(r["objects"]) == 2,
        "object_size": all(o["size_mm"] <= TARGETS["object_size_mm"] for o in r["objects"].values()),
        "sysid_all_params": all(e <= TARGETS["sysid_param_pct"] for e in sysid),
        "rmse_reduction": r["tracking_heldout_rmse_rad"]["reduction_x"] >= TARGETS["rmse_reduction_x"],
    }


def format_report(r: dict[str, Any]) -> str:
    """The table printed by :func:`main`."""
    ok = lambda b: "ok" if b else "MISS"  # noqa: E731
    p = r["pass"]
    i = r["intrinsics_px"]
    lines = [
        f"profile: {r['profile']}",
        f"{'quantity':<34}{'measured':>14}{'target':>12}",
        f"{'intrinsics fx/fy/cx/cy (px)':<34}"
        f"{i['fx']:>5.2f}/{i['fy']:.2f}/{i['cx']:.2f}/{i['cy']:.2f}{'-':>8}",
        f"{'reprojection intr/extr (px)':<34}{r['reprojection_px']['intrinsics']:>8.3f}/"
        f"{r['reprojection_px']['extrinsics']:.3f}{'-':>8}",
        f"{'camera position (mm)':<34}{r['camera_position_mm']:>14.2f}{'<= 5':>12}"
        f"  {ok(p['camera_position'])}",
        f"{'camera rotation (deg)':<34}{r['camera_rotation_deg']:>14.3f}{'<= 0.5':>12}"
        f"  {ok(p['camera_rotation'])}",
    ]
    for body, o in r["objects"].items():
        lines.append(f"{body + ' position (mm)':<34}{o['position_mm']:>14.2f}{'<= 10':>12}")
        lines.append(f"{body + ' size (mm)':<34}{o['size_mm']:>14.2f}{'<= 10':>12}")
    lines.append(f"{'objects':<34}{'':>14}{'':>12}  {ok(p['object_position'] and p['object_size'])}")
    for k, v in r["sysid"].items():
        mark = "" if v["error_pct"] <= TARGETS["sysid_param_pct"] else "  MISS"
        lines.append(
            f"{'sysid ' + k + ' (%)':<34}{v['error_pct']:>14.1f}{'<= 10':>12}{mark}"
            f"   (truth {v['truth']:.4g}, fitted {v['fitted']:.4g})"
        )
    t = r["tracking_heldout_rmse_rad"]
    lines.append(
        f"{'held-out joint RMSE (rad)':<34}{t['before']:>7.4f}->{t['after']:.5f}{'':>3}"
        f"x{t['reduction_x']:.1f} (>= 5)  {ok(p['rmse_reduction'])}"
    )
    lines.append(f"{'held-out EE RMSE (mm)':<34}{t['ee_before_mm']:>7.2f}->{t['ee_after_mm']:.2f}")
    lines.append("wall: " + ", ".join(f"{k} {v:.1f} s" for k, v in r["wall_s"].items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(
        prog="python -m r2s2r_capture.bench_real2sim", description=__doc__.split("\n")[0]
    )
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--profile", default=None, help="ground-truth hardware profile (default: the shipped one)")
    g.add_argument("--random-profile", type=int, default=None, metavar="SEED", help="random profile seed")
    ap.add_argument(
        "--realistic", action="store_true", help="with --random-profile: also random sensor, arm, contact effects"
    )
    ap.add_argument("--out", default="out/bench_real2sim.json", help="JSON report (overwritten)")
    ap.add_argument("--max-iters", type=int, default=30, help="identification iterations")
    ap.add_argument("--quick", action="store_true", help="shorter capture, no HTML report")
    ap.add_argument("--duration", type=float, default=None, help="excitation length (s)")
    ap.add_argument("--max-velocity", type=float, default=None, help="excitation velocity bound (rad/s)")
    ap.add_argument("--harmonics", type=int, default=None, help="excitation sines per joint (k x 0.2 Hz)")
    ns = ap.parse_args(argv)
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="r2s2r-bench-real2sim-") as tmp:
        work = Path(tmp)
        if ns.random_profile is not None:
            profile = random_profile(
                ns.random_profile,
                out.with_name(f"{out.stem}_profile_{ns.random_profile}.yaml"),
                realistic=ns.realistic,
            )
        else:
            profile = profile_path(ns.profile)
        report = run_bench(
            profile,
            work=work,
            max_iters=ns.max_iters,
            quick=ns.quick,
            duration_s=ns.duration,
            max_velocity=ns.max_velocity,
            n_harmonics=ns.harmonics,
        )
    print(format_report(report))
    out.write_text(json.dumps(report, indent=2, default=float), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
