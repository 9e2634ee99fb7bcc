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

``--random-profile SEED`` writes a random profile next to the output, drawn from these ranges (multiples
are of the world's values; the rest is the ideal profile's on the bundled world, the world's own elsewhere).
``--world DIR`` runs on any world folder, e.g. one from ``r2s2r world new``:

=======================  ==============================================
servo kp, kv             x U(0.85, 1.15) (tendon or joint servos of the arm joints)
joint damping            x U(0.8, 1.6); servo kv x U(0.05, 0.2) where the world has none
joint armature           x U(0.9, 1.4); U(0.02, 0.1) kg m2 where the world has none
friction loss (N m)      x U(0.5, 1.5) where the world has some; else U(0.05, 0.4) for the first three
                         arm joints, U(0.03, 0.15) for the others
command latency (s)      U(0.01, 0.05)
fx, fy (px)              U(590, 625); cx, cy: centre + U(-6, 6)
k1, k2, p1, p2, k3       U(-0.08, -0.02), U(0, 0.08), U(-1e-3, 1e-3) x2, U(-0.03, 0)
camera position (m)      sim + U(-0.02, 0.02) per axis; rpy sim + U(-0.02, 0.02) rad
task object half size    x U(0.95, 1.1) (the bundled cube: 0.019 to 0.022 m); target: position sim +
                         U(-0.02, 0.02) across and U(0, 0.02) away from the robot base, yaw U(-0.1, 0.1)
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

import mujoco
import numpy as np
import yaml
from r2s2r_sim.hardware.effect_sampling import random_effect_sections
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.hardware.profile_elements import geom_address, model_servo
from r2s2r_sim.hardware.profile_template import profile_template
from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.world.kinematics import subtree_bodies
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_capture.procedures.capture_config import add_extrinsics_argument
from r2s2r_capture.procedures.session import CaptureConfig, capture_emulated
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim
from r2s2r_capture.real2sim.resim import resim

__all__ = ["TARGETS", "compare", "main", "random_profile", "run_bench"]

DEFAULT_PROFILE = profile_path()
IDEAL_PROFILE = profile_path("ideal")  # the base of random profiles on the bundled world
DEFAULT_WORLD = "tabletop-pick-v1"
TARGETS = {
    "camera_position_mm": 5.0,
    "camera_rotation_deg": 0.5,
    "object_position_mm": 10.0,
    "object_size_mm": 10.0,
    "sysid_param_pct": 10.0,
    "rmse_reduction_x": 5.0,
}
_LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
# Where the world has no armature (many robot files): the order of a geared arm's reflected rotor inertia.
_ARMATURE_IF_NONE = (0.02, 0.1)


@dataclasses.dataclass(frozen=True)
class _ArmJoint:
    """An arm joint of the world with its servo and the world's (sim) values."""

    joint: str
    actuator: str
    kp: float
    kv: float
    damping: float
    armature: float
    frictionloss: float


@dataclasses.dataclass(frozen=True)
class _WorldFacts:
    """What the benchmark needs of a world: its arm, task bodies, camera pose and profile template."""

    arm: tuple[_ArmJoint, ...]
    object_body: str
    target_body: str
    object_geoms: tuple[str, ...]
    object_half_size: float
    object_xy: tuple[float, float]
    base_xy: tuple[float, float]
    table_z: float
    template: dict[str, Any]
    pads: tuple[str, ...]
    timestep: float


def _world_facts(world: str | Path) -> _WorldFacts:
    w = SimWorld(world_path(world))
    model, cfg = w.model, w.config
    if cfg.task is None:
        raise ValueError(f"world {world}: has no task (the benchmark needs an object and a target)")
    arm = []
    for name in w.arm_joint_names:
        jid = model.joint(name).id
        aid = next(
            a
            for a in range(model.nu)
            if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and model.actuator_trnid[a, 0] == jid
        )
        form = model_servo(model, aid)
        if form is None:
            act = model.actuator(aid).name
            raise ValueError(f"world {world}: actuator {act!r} of arm joint {name!r} is not a servo")
        dof = model.jnt_dofadr[jid]
        arm.append(
            _ArmJoint(
                name,
                model.actuator(aid).name,
                form.kp,
                form.kv,
                float(model.dof_damping[dof]),
                float(model.dof_armature[dof]),
                float(model.dof_frictionloss[dof]),
            )
        )
    obj = model.body(cfg.task.object_body)
    geoms = range(int(obj.geomadr[0]), int(obj.geomadr[0] + obj.geomnum[0]))
    target = model.body(int(model.site_bodyid[model.site(cfg.task.target_site).id])).name
    grip_bodies = {int(model.jnt_bodyid[model.joint(j).id]) for j in w.gripper_joint_names}
    moving = {b for g in grip_bodies for b in subtree_bodies(model, g)}
    pads = tuple(
        geom_address(model, g, cfg.robot.prefix)
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) in moving and (model.geom_contype[g] or model.geom_conaffinity[g])
    )
    doc, _ = profile_template(w)
    return _WorldFacts(
        arm=tuple(arm),
        object_body=cfg.task.object_body,
        target_body=target,
        object_geoms=tuple(model.geom(g).name for g in geoms if model.geom(g).name),
        object_half_size=float(max(model.geom_size[g][0] for g in geoms)),
        # the scene file's place (the profile template writes none: each reset draws it per seed)
        object_xy=(float(obj.pos[0]), float(obj.pos[1])),
        base_xy=(float(w.base_pose()[0][0]), float(w.base_pose()[0][1])),
        table_z=float(cfg.task.table_top_z if cfg.task.table_top_z is not None else 0.75),
        template=doc,
        pads=pads,
        timestep=float(model.opt.timestep),
    )


def random_profile(
    seed: int, out: str | Path, *, realistic: bool = False, world: str | Path = DEFAULT_WORLD
) -> Path:
    """Write a random hardware profile of ``world`` (ranges in the module docstring) to ``out``.

    The base is the ideal profile on the bundled world and the world's profile template
    (:mod:`r2s2r_sim.hardware.profile_template`) on any other.  ``realistic`` adds every sensor, arm and
    contact effect, drawn by :func:`r2s2r_sim.hardware.effect_sampling.random_effect_sections` from its
    documented ranges.
    """
    facts = _world_facts(world)
    rng = np.random.default_rng(seed)
    bundled = str(world) == DEFAULT_WORLD
    doc = yaml.safe_load(IDEAL_PROFILE.read_text(encoding="utf-8")) if bundled else facts.template
    doc["name"] = f"{doc['world']}-random-{seed}"
    phys = doc["physics"]
    for i, a in enumerate(facts.arm):
        phys["servos"][a.actuator] = {
            "kp": float(a.kp * rng.uniform(0.85, 1.15)),
            "kv": float(a.kv * rng.uniform(0.85, 1.15)),
        }
        proximal = i < 3
        if a.frictionloss > 0:
            fl = a.frictionloss * rng.uniform(0.5, 1.5)
        else:
            fl = rng.uniform(0.05, 0.4) if proximal else rng.uniform(0.03, 0.15)
        # Where the world has no damping: a tenth or so of the servo's kv (gear and bearing drag).
        damping = a.damping * rng.uniform(0.8, 1.6) if a.damping > 0 else a.kv * rng.uniform(0.05, 0.2)
        armature = a.armature * rng.uniform(0.9, 1.4) if a.armature > 0 else rng.uniform(*_ARMATURE_IF_NONE)
        phys["joints"][a.joint] = {
            "damping": float(damping),
            "armature": float(armature),
            "frictionloss": float(fl),
        }
    doc["driver"]["command_latency_s"] = float(rng.uniform(0.01, 0.05))
    cam = doc["camera"]
    sim_pose = facts.template["camera"]["pose"]
    cam["intrinsics"] = {
        "fx": float(rng.uniform(590, 625)),
        "fy": float(rng.uniform(590, 625)),
        "cx": float((cam["width"] - 1) / 2 + rng.uniform(-6, 6)),
        "cy": float((cam["height"] - 1) / 2 + rng.uniform(-6, 6)),
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
        "position": [float(v + rng.uniform(-0.02, 0.02)) for v in sim_pose["position"]],
        "rpy": [float(v + rng.uniform(-0.02, 0.02)) for v in sim_pose["rpy"]],
    }
    h = float(facts.object_half_size * rng.uniform(0.95, 1.1))
    # A resized object rests on the table: its pose keeps it there (each reset draws x, y and yaw anew).
    doc["objects"][facts.object_body] = {
        "pose": {"position": [*facts.object_xy, facts.table_z + h], "rpy": [0, 0, 0]},
        "geom_sizes": {g: [h, h, h] for g in facts.object_geoms},
    }
    bin_pose = facts.template["objects"][facts.target_body]["pose"]
    # Never moved toward the robot base: a target against the base fuses with it in the reconstruction
    # (real2sim asks for them apart), and `world new` leaves only a small gap there on a small arm.
    bin_xy = np.asarray(bin_pose["position"][:2], dtype=np.float64)
    out_dir = bin_xy - np.asarray(facts.base_xy)
    out_dir /= max(float(np.linalg.norm(out_dir)), 1e-9)
    along = np.array([-out_dir[1], out_dir[0]])
    bin_xy = bin_xy + along * rng.uniform(-0.02, 0.02) + out_dir * abs(rng.uniform(-0.02, 0.02))
    doc["objects"][facts.target_body] = {
        "pose": {
            "position": [float(bin_xy[0]), float(bin_xy[1]), float(bin_pose["position"][2])],
            "rpy": [0, 0, float(rng.uniform(-0.1, 0.1))],
        }
    }
    if realistic:
        joints = tuple(a.joint for a in facts.arm)
        doc.update(
            random_effect_sections(
                rng,
                arm_joints=joints,
                wrist_joints=joints[3:],
                pad_geoms=facts.pads,
                objects=(facts.object_body,),
            )
        )
    path = Path(out)
    path.write_text(f"# random profile, seed {seed} (r2s2r_capture.bench.real2sim)\n" + yaml.safe_dump(doc))
    return path


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
    facts = _world_facts(world)
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
