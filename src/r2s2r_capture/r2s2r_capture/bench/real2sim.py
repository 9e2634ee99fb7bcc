r"""Benchmark of real2sim against the emulated hardware's ground truth.

    python -m r2s2r_capture.bench.real2sim [--world DIR] [--profile P | --random-profile SEED] \
        --out out/bench_real2sim.json

Captures from the emulator (:func:`r2s2r_capture.procedures.session.capture_emulated`) with a hardware
profile, runs :func:`r2s2r_capture.real2sim.pipeline.real2sim` (which never reads the profile), then compares
with the profile and the emulated scene: intrinsics (px), reprojection error (px), camera pose (mm, deg),
per-object position and size (mm), per-parameter identification error (%), and joint-tracking RMSE on a
held-out excitation (another seed, its own bag) replayed with :func:`r2s2r_capture.real2sim.resim.resim` in
the template world (before) and in the identified world (after).

Joint damping and servo kv act alike on positions; the reported efforts split them (see
:mod:`r2s2r_capture.real2sim.pipeline`).  The benchmark scores each, and their sum ("viscous").  A parameter
that a profile's ``arm_effects`` (compliance, Stribeck friction, backlash) make effective has no counterpart
in the sim world: it is reported against a reference value and marked ``effective``, not scored.
The command delay is scored against the delay the stand-in shows, its latency rounded up to the step or
driver tick that applies commands (:func:`delay_as_applied`), with the configured latency beside it.

``--random-profile SEED`` writes a random profile next to the output
(:mod:`r2s2r_capture.bench.random_profile`); ``--world DIR`` runs on any world folder, e.g. one from
``r2s2r world new``.
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
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import profile_path

from r2s2r_capture.bench.random_profile import DEFAULT_WORLD, random_profile, world_facts
from r2s2r_capture.procedures.capture_config import add_extrinsics_argument
from r2s2r_capture.procedures.session import CaptureConfig, capture_emulated
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim
from r2s2r_capture.real2sim.resim import resim

__all__ = ["TARGETS", "compare", "main", "run_bench"]

DEFAULT_PROFILE = profile_path()
TARGETS = {
    "camera_position_mm": 5.0,
    "camera_rotation_deg": 0.5,
    "object_position_mm": 10.0,
    "object_size_mm": 10.0,
    "sysid_param_pct": 10.0,
    "rmse_reduction_x": 5.0,
}
_LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def _rot_deg(R: np.ndarray) -> float:
    return math.degrees(math.acos(float(np.clip((np.trace(R) - 1) / 2, -1.0, 1.0))))


def _pct(value: float, truth: float) -> float:
    """Relative error (%).

    A parameter that is zero in truth has none: it counts as exact only when the fit leaves it at zero
    (within 1e-6), and as infinitely off otherwise.
    """
    if truth:
        return 100.0 * abs(value - truth) / abs(truth)
    return 0.0 if abs(value) <= 1e-6 else float("inf")


def _effective_truths(truths: dict[str, float], effects: Any) -> dict[str, float]:
    """The sim-world parameters a joint's unmodelled effects turn into effective values, with a reference.

    A series spring of stiffness ``k_s`` behind a servo of gain ``kp`` acts at low frequency as one spring of
    ``kp k_s / (kp + k_s)``, and the motor's reflected inertia adds to the armature; viscous friction adds to
    the joint's damping; Coulomb friction (the Stribeck curve at speed) adds to the friction loss.  Backlash
    has no closed form, so a joint with play has every parameter marked effective at its nominal value.
    These references are what identification should land near, not a truth to score it against.
    """
    if effects is None:
        return {}
    out: dict[str, float] = {}
    if effects.stiffness is not None:
        ks = effects.stiffness
        out["kp"] = truths["kp"] * ks / (truths["kp"] + ks)
        out["armature"] = truths["armature"] + effects.motor_inertia
        out["kv"] = truths["kv"]
    if effects.viscous_friction:
        out["damping"] = truths["damping"] + effects.viscous_friction
        out["viscous"] = truths["viscous"] + effects.viscous_friction
    if effects.static_friction or effects.coulomb_friction:
        out["frictionloss"] = truths["frictionloss"] + effects.coulomb_friction
    if effects.backlash:
        out = {k: out.get(k, v) for k, v in truths.items()}
    return out


def delay_as_applied(latency_s: float, world_timestep_s: float, effects: Any) -> float:
    """The command delay the emulated arm shows: ``latency_s`` rounded up to the step that applies commands.

    A queued command reaches the servos on the first driver tick (``control_rate_hz``; without one, physics
    step) at or after its due time, so commands given on that grid, as the excitation's are, wait the latency
    rounded up to the tick; the sim world rounds its own delay up to its step the same way.  This is the
    delay identification can see, and what it is scored against.
    """
    step = world_timestep_s
    if effects is not None and effects.physics_timestep_s is not None:
        step = effects.physics_timestep_s
    tick = step
    if effects is not None and effects.control_rate_hz is not None:
        tick = max(step, 1.0 / effects.control_rate_hz)
    delay = math.ceil(latency_s / tick - 1e-9) * tick
    return math.ceil(delay / step - 1e-9) * step


def compare(
    result: Any, profile: Any, truth: dict[str, Any], world: str | Path = DEFAULT_WORLD
) -> dict[str, Any]:
    """Errors of a :class:`~r2s2r_capture.real2sim.pipeline.Real2SimResult` against profile and scene truth.

    A parameter the profile leaves out has the world's value as its truth.
    """
    facts = world_facts(world)
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
    roles = {"task object": facts.object_body, "target": facts.target_body}
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
    phys_effects = profile.arm
    params: dict[str, dict[str, Any]] = {}
    for a in facts.arm:
        n = a.joint
        servo, joint = phys.servos.get(a.actuator), phys.joints.get(n)
        d_true = joint.damping if joint and joint.damping is not None else a.damping
        kv_true = servo.kv if servo else a.kv
        truths = {
            "kp": servo.kp if servo else a.kp,
            "kv": kv_true,
            "damping": d_true,
            "viscous": kv_true + d_true,
            "armature": joint.armature if joint and joint.armature is not None else a.armature,
            "frictionloss": (
                joint.frictionloss if joint and joint.frictionloss is not None else a.frictionloss
            ),
        }
        values = {
            "kp": fitted.get(f"{n}/kp", nominal.get(f"{n}/kp", float("nan"))),
            "kv": fitted.get(f"{n}/kv", float("nan")),
            "damping": fitted.get(f"{n}/damping", a.damping),
            "viscous": fitted.get(f"{n}/kv", float("nan")) + fitted.get(f"{n}/damping", a.damping),
            "armature": fitted.get(f"{n}/armature", float("nan")),
            "frictionloss": fitted.get(f"{n}/frictionloss", float("nan")),
        }
        effective = _effective_truths(truths, phys_effects.joints.get(n))
        for kind, tv in truths.items():
            tv = effective.get(kind, tv)
            params[f"{n}/{kind}"] = {
                "truth": tv,
                "fitted": values[kind],
                "error_pct": _pct(values[kind], tv),
                "effective": kind in effective,
            }
    lat = profile.driver.command_latency_s
    applied = delay_as_applied(lat, facts.timestep, phys_effects)
    params["command_delay_s"] = {
        "truth": applied,
        "configured": lat,
        "fitted": fitted.get("command_delay_s", 0.0),
        "error_pct": _pct(fitted.get("command_delay_s", 0.0), applied),
        "effective": False,
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
    world: str | Path = DEFAULT_WORLD,
    progress_bars: bool = False,
    extrinsics: str = "known_pose",
) -> dict[str, Any]:
    """Capture, real2sim, held-out resim on ``world`` (id or folder); the report (errors, targets, walls).

    ``extrinsics`` is the capture's camera-pose method (``known_pose`` or ``hand_eye``).

    ``duration_s`` (default: 6 s quick, else the capture default), ``max_velocity`` (rad/s) and
    ``n_harmonics`` override the capture's default excitation trajectory
    (:class:`~r2s2r_capture.procedures.session.CaptureConfig`).
    """
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
        world=world,
        config=CaptureConfig(n_intrinsics_views=8 if quick else 12, excitation=exc, extrinsics=extrinsics),
        progress=progress,
        progress_bars=progress_bars,
    )
    held = capture_emulated(
        work / "heldout",
        profile=profile_path,
        world=world,
        config=CaptureConfig(
            n_intrinsics_views=0, known_board_poses=(), n_scene_frames=0, excitation=exc, seed=1
        ),
    )
    wall["capture"] = time.perf_counter() - t0
    result = real2sim(
        [cap.bag],
        work / "world",
        template=world,
        config=Real2SimConfig(max_iters=max_iters, report=not quick),
        progress=progress,
        progress_bars=progress_bars,
    )
    for k, v in result.stage_s.items():
        wall[f"real2sim.{k}"] = v
    t1 = time.perf_counter()
    before = resim(held.bag, world).stats()
    after = resim(held.bag, result.world_dir).stats()
    wall["resim"] = time.perf_counter() - t1
    report = compare(result, profile, cap.truth, world)
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
    report["extrinsics"] = extrinsics
    report["world"] = str(world)
    report["targets"] = TARGETS
    report["wall_s"] = wall
    report["pass"] = _passes(report)
    return report


def _passes(r: dict[str, Any]) -> dict[str, bool]:
    sysid = [v["error_pct"] for v in r["sysid"].values() if not v.get("effective")]
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
        f"profile: {r['profile']} (world {r.get('world', DEFAULT_WORLD)}, "
        f"{r.get('extrinsics', 'known_pose')} extrinsics)",
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
        if v.get("effective"):  # no counterpart in the sim world: reported, not scored
            lines.append(
                f"{'sysid ' + k + ' (%)':<34}{v['error_pct']:>14.1f}{'effective':>12}"
                f"   (reference {v['truth']:.4g}, fitted {v['fitted']:.4g})"
            )
            continue
        mark = "" if v["error_pct"] <= TARGETS["sysid_param_pct"] else "  MISS"
        lines.append(
            f"{'sysid ' + k + ' (%)':<34}{v['error_pct']:>14.1f}{'<= 10':>12}{mark}"
            f"   (truth {v['truth']:.4g}, fitted {v['fitted']:.4g}"
            + (f"; configured {v['configured']:.4g}, applied on the step)" if "configured" in v else ")")
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
        prog="python -m r2s2r_capture.bench.real2sim", description=__doc__.split("\n")[0]
    )
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--profile", default=None, help="ground-truth hardware profile (default: the shipped one)")
    g.add_argument("--random-profile", type=int, default=None, metavar="SEED", help="random profile seed")
    ap.add_argument("--world", default=DEFAULT_WORLD, help="world id or folder (e.g. from r2s2r world new)")
    ap.add_argument(
        "--realistic", action="store_true", help="with --random-profile: random sensor, arm, contact effects"
    )
    ap.add_argument("--out", default="out/bench_real2sim.json", help="JSON report (overwritten)")
    ap.add_argument("--max-iters", type=int, default=30, help="identification iterations")
    ap.add_argument("--quick", action="store_true", help="shorter capture, no HTML report")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    ap.add_argument("--duration", type=float, default=None, help="excitation length (s)")
    ap.add_argument("--max-velocity", type=float, default=None, help="excitation velocity bound (rad/s)")
    ap.add_argument("--harmonics", type=int, default=None, help="excitation sines per joint (k x 0.2 Hz)")
    add_extrinsics_argument(ap, default="known_pose")
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
                world=ns.world,
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
            world=ns.world,
            progress_bars=not ns.quiet,
            extrinsics=ns.extrinsics,
        )
    print(format_report(report))
    out.write_text(json.dumps(report, indent=2, default=float), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
