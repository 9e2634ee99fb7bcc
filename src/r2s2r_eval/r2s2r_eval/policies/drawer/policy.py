"""Scripted drawer opening: find the handle in RGB-D, hook it with the closed fingers, pull, let go."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import mujoco
import numpy as np

from r2s2r_eval.policies.drawer.config import DrawerParams
from r2s2r_eval.policies.scripted.base import PhasedPolicy, ScriptedPolicy
from r2s2r_eval.policies.scripted.camera import nominal_camera
from r2s2r_eval.policies.scripted.motion import LINEAR_SPEED, CartesianMover
from r2s2r_eval.policies.scripted.perception import blob_points, geom_colour
from r2s2r_eval.policies.scripted.scene import ArmScene, arm_scene
from r2s2r_eval.policy import (
    Action,
    EpisodeInfo,
    Observation,
    PolicyError,
)

__all__ = ["DrawerPhase", "DrawerPolicy"]

_CLEAR_HEIGHT_M = 0.1  # approach height above the hook point (m)
_RELEASE_BACK_M = 0.02  # backing off the bar after the pull (m)
_REACHED_M = 0.01
_PHASE_TIMEOUT_S = 4.0
_PULL_TIMEOUT_S = 8.0
_HANDLE_GEOM_HINT = "handle"  # the handle's geoms are named with this (their colour is what is segmented)


class DrawerPhase(enum.Enum):
    """Steps of the drawer script, in order."""

    PERCEIVE = "perceive"
    APPROACH = "approach"
    DESCEND = "descend"
    PULL = "pull"
    RELEASE = "release"
    LIFT = "lift"
    DONE = "done"  # the fingers have let go of the open drawer and lifted


_ORDER = list(DrawerPhase)


@dataclass(frozen=True)
class _DrawerScene:
    arm: ArmScene
    colour: tuple[float, float, float]  # the handle's colour
    bar_radius: float  # m
    axis: np.ndarray  # unit opening direction of the joint in the world (slide joints only)
    closed_handle: np.ndarray  # handle site with the drawer closed (joint at 0), m


@lru_cache(maxsize=4)
def _drawer_scene(world_dir: Path) -> _DrawerScene:
    scene = arm_scene(world_dir)
    model, task = scene.model, scene.task
    body = model.body(task.object_body).id
    jnt = int(model.body_jntadr[body])
    if jnt < 0 or int(model.jnt_type[jnt]) != int(mujoco.mjtJoint.mjJNT_SLIDE):
        raise PolicyError(f"drawer policy: body {task.object_body!r} has no slide joint")
    handles = [
        g
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) == body and _HANDLE_GEOM_HINT in (model.geom(g).name or "")
    ]
    if not handles:
        raise PolicyError(
            f"drawer policy: body {task.object_body!r} has no geom named '*{_HANDLE_GEOM_HINT}*'"
        )
    data = mujoco.MjData(model)
    data.qpos[model.jnt_qposadr[jnt]] = 0.0
    mujoco.mj_kinematics(model, data)
    axis = data.xmat[body].reshape(3, 3) @ model.jnt_axis[jnt]
    bar = [g for g in handles if int(model.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_CAPSULE)]
    return _DrawerScene(
        arm=scene,
        colour=geom_colour(model, model.geom(handles[0]).name),
        bar_radius=float(model.geom_size[bar[0] if bar else handles[0]][0]),
        axis=axis / np.linalg.norm(axis),
        closed_handle=data.site_xpos[model.site(task.target_site).id].copy(),
    )


class DrawerPolicy(ScriptedPolicy, PhasedPolicy):
    """Scripted drawer opening: see the handle once, hook the closed fingers behind its bar, pull, let go.

    The handle is segmented by colour and back-projected with depth; its bar's centre is the highest,
    outermost part.  The pull runs along the drawer joint's axis until the opening reaches ``open_to_m``
    (measured from the drawer's closed handle position in the MJCF), then the fingers back off the bar and
    lift, leaving the drawer open.  Reads only joint positions, RGB-D, intrinsics and the camera and base
    poses, plus static scene knowledge from the world's MJCF (arm kinematics, the handle's colour and bar
    radius, the joint's axis, the closed handle position).
    """

    params_type = DrawerParams
    tasks = frozenset({"drawer"})
    first_phase = DrawerPhase.PERCEIVE

    def __init__(self, params: DrawerParams | None = None) -> None:
        """Build the policy; the world model is loaded at the first :meth:`reset`."""
        super().__init__(params)
        self._p: DrawerParams = self.params  # type: ignore[assignment]

    @property
    def handle(self) -> np.ndarray | None:
        """The (noisy) handle bar centre estimate of this episode (model world frame, m), once perceived."""
        return self._handle

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode: load the scene model, draw this episode's perception bias."""
        self._start_script(info)
        self._scene = _drawer_scene(Path(info.world_dir))
        self._bias = info.rng().normal(0.0, self._p.perception_noise_m, size=3)
        self._handle: np.ndarray | None = None
        self._goals: dict[DrawerPhase, np.ndarray] = {}
        self._yaw = 0.0

    def _perceive(self, obs: Observation) -> np.ndarray:
        if obs.rgb is None or obs.depth is None or obs.camera_k is None or obs.camera_pose is None:
            raise PolicyError("drawer policy: the first observation lacks rgb, depth, camera_k or pose")
        scene = self._scene
        camera_k, camera_pose = obs.camera_k, obs.camera_pose
        if self._p.assume_camera_of:
            height, width = obs.rgb.shape[:2]
            camera_k, camera_pose = nominal_camera(self._p.assume_camera_of, width, height)
        pts = blob_points(obs.rgb, obs.depth, camera_k, camera_pose, scene.colour)
        if pts is None:
            raise PolicyError("drawer policy: handle not found in the colour image")
        if obs.base_pose is not None:  # observed world frame -> model world frame
            to_model = scene.arm.base_pose @ np.linalg.inv(obs.base_pose)
            pts = pts @ to_model[:3, :3].T + to_model[:3, 3]
        # The bar is the outermost part along the opening axis; its top is the handle's highest point.
        out = pts @ scene.axis
        front = float(np.percentile(out, 98))
        bar = pts[out >= front - 2 * scene.bar_radius]
        centre = np.median(bar, axis=0)
        centre += scene.axis * (front - scene.bar_radius - float(centre @ scene.axis))
        centre[2] = float(np.percentile(pts[:, 2], 98)) - scene.bar_radius
        return np.asarray(centre + self._bias)

    def _plan(self, handle: np.ndarray, yaw_now: float) -> None:
        """Goals of every motion phase from the handle estimate (model world frame)."""
        p, scene = self._p, self._scene
        axis = scene.axis
        hook = handle - axis * p.hook_offset_m - np.array([0.0, 0.0, p.hook_depth_m])
        opened = float((handle - scene.closed_handle) @ axis)  # the drawer's opening now, as seen
        pulled = hook + axis * max(p.open_to_m - opened, 0.0)
        released = pulled - axis * _RELEASE_BACK_M
        up = np.array([0.0, 0.0, _CLEAR_HEIGHT_M])
        self._goals = {
            DrawerPhase.APPROACH: hook + up,
            DrawerPhase.DESCEND: hook,
            DrawerPhase.PULL: pulled,
            DrawerPhase.RELEASE: released,
            DrawerPhase.LIFT: released + up,
            DrawerPhase.DONE: released + up,
        }
        # Fingers side by side along the bar (closed, they hook it across their 16 mm thickness).
        yaw = math.atan2(axis[1], axis[0]) + math.pi / 2
        self._yaw = yaw + math.pi * round((yaw_now - yaw) / math.pi)

    def act(self, observation: Observation) -> Action:
        """Next arm command (gripper closed: the fingers are the hook)."""
        if self._info is None:
            raise PolicyError("drawer policy: act() called before reset()")
        info, p = self._info, self._p
        dt = self._clock.tick(observation.stamp)
        q_meas = observation.positions(info.arm_joint_names)
        if self._phase is DrawerPhase.PERCEIVE:
            self._mover = CartesianMover(self._scene.arm.arm, q_meas, p.speed)
            self._handle = self._perceive(observation)
            self._plan(self._handle, self._mover.yaw)
            self._phase, self._phase_start = DrawerPhase.APPROACH, observation.stamp
        mover = self._mover
        assert mover is not None
        goal = self._goals[self._phase]
        pulling = self._phase is DrawerPhase.PULL
        speed = p.pull_speed_m_s / p.speed if pulling else LINEAR_SPEED
        at = mover.step(goal, self._yaw, dt, linear_speed=speed)
        elapsed = observation.stamp - self._phase_start
        reached = float(np.linalg.norm(mover.tool(q_meas) - goal)) <= _REACHED_M
        timeout = _PULL_TIMEOUT_S if pulling else _PHASE_TIMEOUT_S
        if self._phase is not DrawerPhase.DONE and at and (reached or elapsed >= timeout):
            self._phase = _ORDER[_ORDER.index(self._phase) + 1]
            self._phase_start = observation.stamp
        return Action(arm_positions=mover.q_cmd.copy(), gripper=info.gripper_command_range[1])
