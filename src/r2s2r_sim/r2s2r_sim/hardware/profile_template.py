"""A hardware profile template for a world: every joint, servo and contact geom with the world's own values.

Unchanged, the template describes an ideal unit: the emulated hardware then runs the sim world's physics
with ideal sensors.  A user edits the values their unit differs in (see docs/concepts/hardware-profiles.md).
Geoms without names are addressed as :mod:`r2s2r_sim.world.geom_keys` describes, servos driven through
tendons as :mod:`r2s2r_sim.hardware.profile_elements` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml
from transforms3d.euler import mat2euler

from r2s2r_sim.hardware.profile_elements import model_servo
from r2s2r_sim.render.renderer import camera_intrinsics
from r2s2r_sim.world.geom_keys import geom_address
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["profile_template", "write_profile_template"]

# The sim's /joint_states rate (config/sim_node.yaml), the emulated driver's default.
_JOINT_STATE_RATE_HZ = 500.0
# The optical frame in the camera link frame (x fwd, y left, z up), and MuJoCo's camera in the optical one.
_LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
_OPTICAL_TO_MJCAM = np.diag([1.0, -1.0, -1.0])


def _num(value: float) -> float:
    """Nine significant digits (seven for a float32 value): the world's value, readable."""
    if isinstance(value, np.float32):
        return float(f"{float(value):.7g}")
    v = float(f"{float(value):.9g}")
    return 0.0 if abs(v) < 1e-12 else v


def _vec(values: Any) -> list[float]:
    return [_num(v) for v in np.asarray(values).ravel()]


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name


def profile_template(world: SimWorld) -> tuple[dict[str, Any], list[str]]:
    """The profile document (a mapping ready for YAML) of ``world`` at its own values.

    Returns:
        The document, and the names of the actuators that are not servos (a profile cannot describe them).
    """
    model, cfg = world.model, world.config
    prefix = cfg.robot.prefix
    world.reset(0)
    robot = world.robot_body_ids
    task_body = cfg.task.object_body if cfg.task is not None else None

    masses: dict[str, float] = {}
    for b in range(1, model.nbody):
        name = model.body(b).name
        if name and float(model.body_mass[b]) > 0 and (b in robot or name == task_body):
            masses[_strip(name, prefix)] = _num(model.body_mass[b])

    friction: dict[str, list[float]] = {}
    for g in range(model.ngeom):
        if model.geom_contype[g] or model.geom_conaffinity[g]:
            friction[geom_address(model, g, prefix)] = _vec(model.geom_friction[g])

    joints: dict[str, dict[str, float]] = {}
    for j in range(model.njnt):
        if int(model.jnt_type[j]) in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            continue
        dof = int(model.jnt_dofadr[j])
        joints[_strip(model.joint(j).name, prefix)] = {
            "damping": _num(model.dof_damping[dof]),
            "armature": _num(model.dof_armature[dof]),
            "frictionloss": _num(model.dof_frictionloss[dof]),
        }

    servos: dict[str, dict[str, float]] = {}
    other: list[str] = []
    for a in range(model.nu):
        name = _strip(model.actuator(a).name, prefix)
        form = model_servo(model, a)
        if form is None or not name:
            other.append(name or f"#{a}")
            continue
        servos[name] = {"kp": _num(form.kp), "kv": _num(form.kv)}

    cam_cfg = cfg.cameras[0]
    cid = world.camera_id(cam_cfg.name)
    mjcf_camera = model.camera(cid).name
    k = camera_intrinsics(model, mjcf_camera, cam_cfg.width, cam_cfg.height)
    r_link = world.data.cam_xmat[cid].reshape(3, 3) @ _OPTICAL_TO_MJCAM.T @ _LINK_TO_OPTICAL.T
    roll, pitch, yaw = mat2euler(r_link, "sxyz")  # fixed axes: R = Rz(yaw) Ry(pitch) Rx(roll)

    objects: dict[str, Any] = {}
    for b in range(1, model.nbody):
        name = model.body(b).name
        if b in robot or not name or int(model.body_parentid[b]) != 0:
            continue
        # The scene file's pose.  The task object has none here: each reset places it per seed, as in the
        # sim, so a pose written for it would be overridden at every episode.
        rpy = mat2euler(_quat_to_mat(model.body_quat[b]), "sxyz")
        entry: dict[str, Any] = {}
        if name != task_body:
            entry["pose"] = {"position": _vec(model.body_pos[b]), "rpy": _vec(rpy)}
        else:
            sizes = {
                model.geom(g).name: _vec(model.geom_size[g])
                for g in range(int(model.body_geomadr[b]), int(model.body_geomadr[b] + model.body_geomnum[b]))
                if model.geom(g).name
            }
            if sizes:
                entry["geom_sizes"] = sizes
        objects[name] = entry

    lights: dict[str, Any] = {}
    for li in range(model.nlight):
        name = model.light(li).name
        if name and int(model.light_bodyid[li]) == 0:
            lights[name] = {
                "position": _vec(model.light_pos[li]),
                "direction": _vec(model.light_dir[li]),
                "diffuse": _vec(model.light_diffuse[li]),
            }

    doc: dict[str, Any] = {
        "name": f"{cfg.id}-unit",
        "world": cfg.id,
        "physics": {
            "body_masses_kg": masses,
            "geom_friction": friction,
            "joints": joints,
            "servos": servos,
        },
        "driver": {
            "command_latency_s": 0.0,
            "joint_state_rate_hz": _JOINT_STATE_RATE_HZ,
            "joint_state_noise": {"position_std_rad": 0.0, "velocity_std_rad_s": 0.0},
        },
        "camera": {
            "name": cam_cfg.name,
            "width": cam_cfg.width,
            "height": cam_cfg.height,
            "rate_hz": _num(cam_cfg.rate_hz),
            "intrinsics": {
                "fx": _num(k[0, 0]),
                "fy": _num(k[1, 1]),
                "cx": _num(k[0, 2]),
                "cy": _num(k[1, 2]),
            },
            "distortion": {"model": "plumb_bob", "k1": 0.0, "k2": 0.0, "p1": 0.0, "p2": 0.0, "k3": 0.0},
            "pose": {"position": _vec(world.data.cam_xpos[cid]), "rpy": _vec((roll, pitch, yaw))},
        },
        "objects": objects,
        "lights": lights,
    }
    return doc, other


def _quat_to_mat(quat: np.ndarray) -> np.ndarray:
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=np.float64))
    return mat.reshape(3, 3)


def _header(world: SimWorld, other: list[str]) -> str:
    lines = [
        f"# Hardware profile TEMPLATE for world {world.world_id!r} ({world.config.source.parent}),",
        "# written by `r2s2r profile new`.  Every value is the world's own: unchanged, the emulated hardware",
        "# runs the sim's physics with ideal sensors.  Change what your unit differs in; delete the rest.",
        "# Layout and effect sections (depth_sensor, color_sensor, frame_timing, arm_effects, contacts):",
        "# docs/concepts/hardware-profiles.md.  Units: SI (m, kg, s, rad, N); pixels for intrinsics.",
        "# Names: robot names unprefixed, as in world.yaml.  A geom without a name is 'body:<body>/<index>'",
        "# (its index among the body's geoms in the robot file, from 0); contacts.geoms takes the same keys.",
        "# physics.geom_friction lists every geom that can touch something ([sliding, torsional, rolling]).",
        "# physics.servos: force = kp (s ctrl - q) - kv qdot for every actuator of that form, tendon-driven",
        "# ones included (q is then the tendon's length); s, the command scale, stays the world's.",
        "# objects: the task object has no pose: each reset places it per seed (x, y, yaw), as in the sim.",
    ]
    if other:
        lines.append(f"# Actuators that are not servos (no profile entry): {', '.join(other)}.")
    return "\n".join(lines) + "\n"


class _Dumper(yaml.SafeDumper):
    """Leaf lists and small mappings in flow style, the rest in block style, in insertion order."""


def _represent_dict(dumper: yaml.SafeDumper, data: dict[str, Any]) -> yaml.Node:
    flow = all(not isinstance(v, dict | list) for v in data.values()) and len(data) <= 6
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)


def write_profile_template(world_dir: str | Path, out: str | Path) -> Path:
    """Write the template of the world folder ``world_dir`` to ``out`` (never overwriting a file).

    Raises:
        WorldError: the world does not load.
        FileExistsError: ``out`` exists.
    """
    world = SimWorld(world_dir)
    doc, other = profile_template(world)
    path = Path(out)
    if path.exists():
        raise FileExistsError(f"{path}: already exists; refusing to overwrite it")
    text = _header(world, other) + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=120)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(text)
    return path
