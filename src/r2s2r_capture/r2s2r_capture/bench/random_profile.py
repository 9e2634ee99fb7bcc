r"""Random hardware profiles of a world, for benchmarks that score real2sim against a known truth.

A random profile is drawn from these ranges (multiples are of the world's values; the rest is the ideal
profile's on the bundled world, the world's own elsewhere, e.g. one from ``r2s2r world new``):

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

import dataclasses
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml
from r2s2r_sim.hardware.effect_sampling import random_effect_sections
from r2s2r_sim.hardware.profile_elements import model_servo
from r2s2r_sim.hardware.profile_template import profile_template
from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.world.geom_keys import geom_address, gripper_contact_geoms
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

__all__ = ["DEFAULT_WORLD", "IDEAL_PROFILE", "WorldFacts", "random_profile", "world_facts"]

IDEAL_PROFILE = profile_path("ideal")  # the base of random profiles on the bundled world
DEFAULT_WORLD = "tabletop-pick-v1"
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
class WorldFacts:
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


def world_facts(world: str | Path) -> WorldFacts:
    """The arm's joints and servos, the gripper's pads and the profile template of ``world``."""
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
    pads = tuple(
        geom_address(model, g, cfg.robot.prefix) for g in gripper_contact_geoms(model, w.gripper_joint_names)
    )
    doc, _ = profile_template(w)
    return WorldFacts(
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
    facts = world_facts(world)
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
    head = f"# random profile, seed {seed} (r2s2r_capture.bench.random_profile)\n"
    path.write_text(head + yaml.safe_dump(doc))
    return path
