"""Labelled still frames for the BC network's object-state head: many object poses per world, cheaply.

A demonstration shows one object pose per episode, so 160 demonstrations teach the auxiliary head (which
reads the object's position from the image) only 160 places, and it missed new ones by about 2 cm.  These
frames put the object at a fresh random pose (the variation config's ``objects`` ranges, else the world's
``task.object_pose_range``; a drawer or door anywhere in its joint's range) and the arm at a random
tool-down pose above the table for every frame, in worlds drawn from the same variation config as the
demonstrations, and keep the small RGB frame with the object's true state
(:data:`~r2s2r_eval.learning.demos.ENV_STATE_NAMES`).  No physics step runs: poses are set and the scene is
rendered, about a hundred times faster per labelled pose than a demonstration.

Written as one ``frames.npz`` (``images`` N x H x W x 3 uint8, ``env`` N x 5 float32) plus ``meta.json``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from r2s2r_sim.ranges import check_fields, within
from r2s2r_sim.render.renderer import RgbdRenderer
from r2s2r_sim.variations import load_variation_config, sample_variation
from r2s2r_sim.world.kinematics import KinematicArm, tool_down_rotation

from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.learning.demos import ENV_STATE_NAMES, attempt_seed, downscale, object_state

__all__ = ["FRAMES_FILE", "PerceptionFramesConfig", "collect_perception_frames", "load_perception_frames"]

FRAMES_FILE = "frames.npz"
META_FILE = "meta.json"
# Tool positions drawn for the arm: around the object's range and up to the carrying height (m).
_TOOL_MARGIN_M = 0.12
_TOOL_Z_ABOVE_OBJECT = (0.0, 0.3)
_ARTICULATED = (int(mujoco.mjtJoint.mjJNT_SLIDE), int(mujoco.mjtJoint.mjJNT_HINGE))


@dataclass(frozen=True, kw_only=True)
class PerceptionFramesConfig:
    """What :func:`collect_perception_frames` renders.

    Attributes:
        world: bundled world id or world folder.
        variations: variation config YAML (``None``: the base world).
        worlds: sampled worlds (variations) (>= 1).
        per_world: frames per world, each with a fresh object and arm pose (>= 1).
        seed: base seed; world ``i`` uses ``attempt_seed(seed, i)``.
        image_width, image_height, render_scale: as :class:`~r2s2r_eval.learning.demos.DemoConfig`'s.
        arm_at_start: fraction of frames that keep the arm at the world's start pose (where an episode's
            first, decisive frame is taken).
    """

    world: str = "tabletop-pick-v1"
    variations: Path | None = None
    worlds: int = within(100, ">= 1")
    per_world: int = within(20, ">= 1")
    seed: int = 0
    image_width: int = within(96, ">= 1")
    image_height: int = within(72, ">= 1")
    render_scale: int = within(2, ">= 1")
    arm_at_start: float = within(0.3, "[0, 1]")

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class _ObjectPoser:
    """Draws the task object's pose for a frame and labels it; ``x``, ``y``, ``z`` bound the arm's tool.

    A free object gets a position and yaw in the objects ranges; an articulated one (a drawer on its slide,
    a door on its hinge) a position of its joint anywhere in the joint's range, so the head sees every
    opening the task passes through.
    """

    world: Any
    body: str
    sample: Callable[[np.random.Generator], None]
    x: tuple[float, float]
    y: tuple[float, float]
    z: float

    def place(self, rng: np.random.Generator) -> None:
        self.sample(rng)

    def label(self) -> np.ndarray:
        """The object's state after ``mj_forward`` (see :func:`~r2s2r_eval.learning.demos.object_state`)."""
        return object_state(self.world, self.body)


def _object_poser(world_id: str, world: Any, vcfg: Any) -> _ObjectPoser:
    """How frames of ``world`` place its task object (see :class:`_ObjectPoser`).

    Raises:
        ValueError: a free object without pose ranges, or a jointed one whose joint has no range.
    """
    wc, model, data = world.config, world.model, world.data
    body = model.body(wc.task.object_body).id
    jnt = int(model.body_jntadr[body])
    if jnt >= 0 and int(model.jnt_type[jnt]) == int(mujoco.mjtJoint.mjJNT_FREE):
        if vcfg is not None and vcfg.objects.enabled:
            xr, yr, yawr = vcfg.objects.x, vcfg.objects.y, vcfg.objects.yaw
        elif wc.task.object_pose_range is not None:
            r = wc.task.object_pose_range
            xr, yr, yawr = r.x, r.y, r.yaw
        else:
            raise ValueError(f"world {world_id!r}: no object pose range (task.object_pose_range)")
        qadr = int(model.jnt_qposadr[jnt])
        z_obj = float(data.qpos[qadr + 2])

        def place_free(rng: np.random.Generator) -> None:
            x, y, yaw = rng.uniform(*xr), rng.uniform(*yr), rng.uniform(*yawr)
            data.qpos[qadr + 2] = z_obj
            world.place_task_object(x, y, yaw)

        return _ObjectPoser(world, wc.task.object_body, place_free, tuple(xr), tuple(yr), z_obj)
    if int(model.body_jntnum[body]) != 1 or int(model.jnt_type[jnt]) not in _ARTICULATED:
        raise ValueError(
            f"world {world_id!r}: task.object_body {wc.task.object_body!r} needs a free joint or one slide "
            "or hinge joint"
        )
    if not model.jnt_limited[jnt]:
        raise ValueError(
            f"world {world_id!r}: joint {model.joint(jnt).name!r} of the task object has no range"
        )
    qadr = int(model.jnt_qposadr[jnt])
    lo, hi = (float(v) for v in model.jnt_range[jnt])
    # The arm works at the target site (a drawer's handle) wherever the joint puts it.
    site = model.site(wc.task.target_site).id
    start = float(data.qpos[qadr])
    ends = []
    for q in (lo, hi):
        data.qpos[qadr] = q
        mujoco.mj_kinematics(model, data)
        ends.append(data.site_xpos[site].copy())
    data.qpos[qadr] = start
    mujoco.mj_kinematics(model, data)
    ends_xyz = np.array(ends)

    def place_joint(rng: np.random.Generator) -> None:
        data.qpos[qadr] = rng.uniform(lo, hi)

    return _ObjectPoser(
        world,
        wc.task.object_body,
        place_joint,
        (float(ends_xyz[:, 0].min()), float(ends_xyz[:, 0].max())),
        (float(ends_xyz[:, 1].min()), float(ends_xyz[:, 1].max())),
        float(ends_xyz[:, 2].min()),
    )


def collect_perception_frames(
    out: str | Path, cfg: PerceptionFramesConfig, *, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Render ``cfg.worlds * cfg.per_world`` labelled frames into ``out`` (see the module docstring).

    Raises:
        ValueError: ``out`` holds frames already, or the world has no task, camera or tool site.
        VariationError / WorldError: a bad variation config or world.
    """
    out = Path(out)
    if (out / FRAMES_FILE).exists():
        raise ValueError(f"{out / FRAMES_FILE}: exists already, not overwriting")
    vcfg = load_variation_config(cfg.variations) if cfg.variations is not None else None
    images: list[np.ndarray] = []
    envs: list[np.ndarray] = []
    s = cfg.render_scale
    for i in range(cfg.worlds):
        seed = attempt_seed(cfg.seed, i)
        rng = np.random.default_rng(seed)
        variation = sample_variation(vcfg, seed) if vcfg is not None else None
        with EpisodeRunner(cfg.world, variation=variation) as runner:
            world = runner.world
            wc = world.config
            if wc.task is None or wc.robot.ee_site is None:
                raise ValueError(f"world {cfg.world!r}: needs a task and robot.ee_site")
            model, data = world.model, world.data
            world.reset(seed)
            prefix = wc.robot.prefix
            joints = tuple(prefix + n for n in wc.robot.arm_joints)
            arm = KinematicArm(model, joints, prefix + wc.robot.ee_site)
            q_start = data.qpos[arm.qadr].copy()
            poser = _object_poser(cfg.world, world, vcfg)
            fingers = []
            if wc.robot.gripper is not None:
                for name in wc.robot.gripper.joints:
                    fingers.append(int(model.jnt_qposadr[model.joint(prefix + name).id]))
            cam = model.camera(world.camera_id(runner.camera.name)).name
            with RgbdRenderer(model, cfg.image_width * s, cfg.image_height * s) as renderer:
                for _ in range(cfg.per_world):
                    poser.place(rng)
                    q = q_start
                    if rng.random() >= cfg.arm_at_start:
                        tool = np.array(
                            [
                                rng.uniform(poser.x[0] - _TOOL_MARGIN_M, poser.x[1] + _TOOL_MARGIN_M),
                                rng.uniform(poser.y[0] - _TOOL_MARGIN_M, poser.y[1] + _TOOL_MARGIN_M),
                                poser.z + rng.uniform(*_TOOL_Z_ABOVE_OBJECT),
                            ]
                        )
                        q, _ = arm.ik(tool, tool_down_rotation(rng.uniform(-math.pi, math.pi)), q_start)
                    data.qpos[arm.qadr] = q
                    for adr in fingers:
                        data.qpos[adr] = rng.uniform(0.0, 0.04)
                    mujoco.mj_forward(model, data)
                    rgb, _ = renderer.render(data, cam, depth_range=runner.camera.depth_range)
                    images.append(downscale(rgb, cfg.image_width, cfg.image_height))
                    envs.append(poser.label())
        if progress is not None:
            progress(i + 1, cfg.worlds)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (FRAMES_FILE + ".tmp.npz")
    np.savez(tmp, images=np.stack(images), env=np.stack(envs))
    meta = {
        **{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "frames": len(images),
        "env_names": list(ENV_STATE_NAMES),
    }
    (out / META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    os.replace(tmp, out / FRAMES_FILE)
    return out


def load_perception_frames(folder: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``(images, env)`` of a folder written by :func:`collect_perception_frames`.

    Raises:
        ValueError: the folder holds no frames, or arrays of mismatched length.
    """
    path = Path(folder) / FRAMES_FILE
    if not path.is_file():
        raise ValueError(f"{path}: missing (write it with collect_perception_frames)")
    with np.load(path) as z:
        images, env = z["images"], z["env"]
    if images.ndim != 4 or images.shape[-1] != 3 or len(images) != len(env):
        raise ValueError(f"{path}: images {images.shape} and env {env.shape} do not match")
    return images, env
