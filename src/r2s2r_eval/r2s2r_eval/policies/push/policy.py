"""Scripted closed-loop pushing from RGB-D perception and inverse kinematics on a kinematic arm copy."""

from __future__ import annotations

import enum
import logging
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from r2s2r_sim.tasks.config import TaskType

from r2s2r_eval.policies.push.config import PushParams
from r2s2r_eval.policies.scripted.base import PhasedPolicy, ScriptedPolicy
from r2s2r_eval.policies.scripted.motion import CartesianMover
from r2s2r_eval.policies.scripted.perception import blob_points, flat_marker_centre, geom_colour
from r2s2r_eval.policies.scripted.scene import ArmScene, arm_scene, body_geom, half_height
from r2s2r_eval.policy import (
    Action,
    EpisodeInfo,
    Observation,
    PolicyError,
)

__all__ = ["PushPhase", "PushPolicy"]

_log = logging.getLogger(__name__)

# Half the thickness of the closed fingers along the push direction (arm6 finger boxes, 2 x 8 mm).
_FINGER_HALF_M = 0.008
# Clearance (m) behind the object at the pre-push point, and the height (m) the tool travels at above it.
_STANDOFF_M = 0.025
_CLEAR_HEIGHT_M = 0.09
# How far (m) past the contact point the push set-point leads, and the lateral tool-to-line error (m)
# beyond which the policy lifts and re-approaches.
_LEAD_M = 0.03
_MAX_LATERAL_M = 0.02
_REACHED_M = 0.01
_PHASE_TIMEOUT_S = 4.0
_PUSH_TIMEOUT_S = 15.0
# Points within this height (m) of the highest object point belong to its top face.
_TOP_BAND_M = 0.006
# An estimate this far (m) from the last one is ignored, up to this many frames in a row.
_MAX_JUMP_M = 0.025
_MAX_REJECTED = 4
# Frames whose target-marker fixes are averaged; they are taken before the first push, while the arm and
# the object are away from the target.
_TARGET_FRAMES = 3


class PushPhase(enum.Enum):
    """Steps of the push script."""

    APPROACH = "approach"
    DESCEND = "descend"
    PUSH = "push"
    RETREAT = "retreat"
    LIFT = "lift"
    DONE = "done"  # the tool has backed off and lifted after the push


@dataclass(frozen=True)
class _PushScene:
    arm: ArmScene
    colour: tuple[float, float, float]
    radius: float  # object's horizontal half extent (m)
    bottom_z: float  # object's resting bottom (m)
    target: np.ndarray  # target site (m): where the model has the target; used when the marker is unseen
    target_colour: tuple[float, float, float] | None  # the target marker's colour; None: no marker geom


@lru_cache(maxsize=4)
def _push_scene(world_dir: Path) -> _PushScene:
    scene = arm_scene(world_dir)
    model, task = scene.model, scene.task
    if task.type is not TaskType.PUSH:
        raise PolicyError(f"push policy: world {world_dir} has a {task.type.value!r} task, not 'push'")
    g = body_geom(model, task.object_body, "push")
    centre_z = float(scene.data.xpos[model.body(task.object_body).id][2])
    # The target's marker: the visual geom on the target site's body (a taped disc), if the world has one.
    marker_body = int(model.site_bodyid[model.site(task.target_site).id])
    marker = [m for m in range(model.ngeom) if marker_body and int(model.geom_bodyid[m]) == marker_body]
    return _PushScene(
        arm=scene,
        colour=geom_colour(model, model.geom(g).name),
        radius=float(model.geom_size[g][0]),
        bottom_z=centre_z - half_height(model, g),
        target=scene.site(task.target_site),
        target_colour=geom_colour(model, model.geom(marker[0]).name) if marker else None,
    )


class PushPolicy(ScriptedPolicy, PhasedPolicy):
    """Scripted push: approach behind the object, lower the closed fingers, push it to the target, back off.

    The object is re-estimated from every frame (its top face, segmented by colour, back-projected with
    depth), and the push set-point stays behind it on the line to the target, so the push corrects as the
    object turns away.  A lateral miss beyond 2 cm lifts the tool and approaches again.  Reads only joint
    positions, RGB-D, intrinsics and the camera and base poses, plus static scene knowledge from the world's
    MJCF (the arm's kinematics, the object's colour and size, the target marker's colour).

    The target is where its marker (the disc on the table, segmented by its colour) is seen in the frames
    before the first push, since a real cell's tape is never exactly where the model has it.  Only when
    the marker is not seen does the policy push to the model's target site, and it logs that once.
    """

    params_type = PushParams
    tasks = frozenset({"push"})
    first_phase = PushPhase.APPROACH

    def __init__(self, params: PushParams | None = None) -> None:
        """Build the policy; the world model is loaded at the first :meth:`reset`."""
        super().__init__(params)
        self._p: PushParams = self.params  # type: ignore[assignment]

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode: load the scene model, draw this episode's perception bias."""
        self._start_script(info)
        self._scene = _push_scene(Path(info.world_dir))
        self._bias = info.rng().normal(0.0, self._p.perception_noise_m, size=2)
        self._object: np.ndarray | None = None
        self._rejected = 0
        self._dir = np.zeros(2)
        self._yaw = 0.0
        self._back_goal = np.zeros(3)
        self._target_fixes: list[np.ndarray] = []
        self._target_unseen_said = False
        self._pushed = False  # the target is perceived only before the first push

    @property
    def target(self) -> np.ndarray:
        """Where the policy pushes to (x, y; m, model world frame): the marker seen, else the model's site."""
        if self._target_fixes:
            return np.asarray(np.mean(self._target_fixes, axis=0))
        return np.asarray(self._scene.target[:2])

    def _to_model(self, obs: Observation, point: np.ndarray) -> np.ndarray:
        """A point of the observed world frame in the model's world frame (the base poses tie the two)."""
        if obs.base_pose is None:
            return point
        to_model = self._scene.arm.base_pose @ np.linalg.inv(obs.base_pose)
        return np.asarray(to_model[:3, :3] @ point + to_model[:3, 3])

    def _perceive_target(self, obs: Observation) -> None:
        colour = self._scene.target_colour
        if colour is None or len(self._target_fixes) >= _TARGET_FRAMES or self._pushed:
            return
        assert obs.rgb is not None and obs.depth is not None
        assert obs.camera_k is not None and obs.camera_pose is not None
        centre = flat_marker_centre(blob_points(obs.rgb, obs.depth, obs.camera_k, obs.camera_pose, colour))
        if centre is not None:
            self._target_fixes.append(self._to_model(obs, centre)[:2])
        elif not self._target_fixes and not self._target_unseen_said:
            self._target_unseen_said = True
            _log.warning(
                "push policy: target marker (colour %s) not seen; pushing to the model's target site %s",
                np.round(colour, 2).tolist(),
                np.round(self._scene.target[:2], 3).tolist(),
            )

    def _perceive(self, obs: Observation) -> None:
        if obs.rgb is None or obs.depth is None or obs.camera_k is None or obs.camera_pose is None:
            if self._object is None:
                raise PolicyError("push policy: the first observation lacks rgb, depth, camera_k or pose")
            return
        self._perceive_target(obs)
        if self._object is not None and not self._p.closed_loop:
            return
        pts = blob_points(obs.rgb, obs.depth, obs.camera_k, obs.camera_pose, self._scene.colour)
        if pts is None:
            if self._object is None:
                raise PolicyError("push policy: object not found in the colour image")
            return  # occluded: keep the last estimate
        top = pts[pts[:, 2] >= np.percentile(pts[:, 2], 98) - _TOP_BAND_M]
        centre = self._to_model(obs, np.array([*np.median(top[:, :2], axis=0), 0.0]))
        estimate = centre[:2] + self._bias
        # The fingers hide part of the object while pushing: a jump no push could cause is a bad blob.
        if self._object is not None and np.linalg.norm(estimate - self._object) > _MAX_JUMP_M:
            self._rejected += 1
            if self._rejected <= _MAX_REJECTED:
                return
        self._rejected = 0
        self._object = estimate

    def _advance(self, phase: PushPhase, stamp: float) -> None:
        self._phase = phase
        self._phase_start = stamp
        self._pushed = self._pushed or phase is PushPhase.PUSH

    def act(self, observation: Observation) -> Action:
        """Next arm command (gripper closed: the fingers are the pusher)."""
        if self._info is None:
            raise PolicyError("push policy: act() called before reset()")
        info, scene, p = self._info, self._scene, self._p
        dt = self._clock.tick(observation.stamp)
        q_meas = observation.positions(info.arm_joint_names)
        if self._mover is None:
            self._mover = CartesianMover(scene.arm.arm, q_meas, p.speed)
            self._phase_start = observation.stamp
        mover = self._mover
        self._perceive(observation)
        assert self._object is not None
        obj, target = self._object, self.target
        to_target = target - obj
        remaining = float(np.linalg.norm(to_target))
        if self._phase in (PushPhase.APPROACH, PushPhase.DESCEND):
            # The push direction and tool yaw are fixed for the approach (fingers side by side across it).
            self._dir = to_target / max(remaining, 1e-6)
            yaw = math.atan2(self._dir[1], self._dir[0]) + math.pi / 2
            self._yaw = yaw + math.pi * round((mover.yaw - yaw) / math.pi)
        u = self._dir
        push_z = scene.bottom_z + p.push_height_m
        behind = obj - u * (scene.radius + _FINGER_HALF_M + _STANDOFF_M)
        elapsed = observation.stamp - self._phase_start
        tool = mover.tool(q_meas)
        phase = self._phase
        if phase is PushPhase.APPROACH:
            goal = np.array([*behind, push_z + _CLEAR_HEIGHT_M])
            at = mover.step(goal, self._yaw, dt)
            if at and (np.linalg.norm(tool - goal) <= _REACHED_M or elapsed >= _PHASE_TIMEOUT_S):
                self._advance(PushPhase.DESCEND, observation.stamp)
        elif phase is PushPhase.DESCEND:
            goal = np.array([*behind, push_z])
            at = mover.step(goal, self._yaw, dt)
            if at and (np.linalg.norm(tool - goal) <= _REACHED_M or elapsed >= _PHASE_TIMEOUT_S):
                self._advance(PushPhase.PUSH, observation.stamp)
        elif phase is PushPhase.PUSH:
            # Keep the tool behind the object on its line to the target, leading into it.
            u = to_target / max(remaining, 1e-6)
            goal = np.array([*(obj - u * (scene.radius + _FINGER_HALF_M) + u * _LEAD_M), push_z])
            mover.step(goal, self._yaw, dt, linear_speed=p.push_speed_m_s / p.speed)
            rel = mover.pos[:2] - obj
            lateral = abs(float(u[0] * rel[1] - u[1] * rel[0]))
            if remaining <= p.stop_tolerance_m or elapsed >= _PUSH_TIMEOUT_S:
                self._back_goal = np.array([*(mover.pos[:2] - self._dir * 0.04), push_z])
                self._advance(PushPhase.RETREAT, observation.stamp)
            elif lateral > _MAX_LATERAL_M or float(np.dot(rel, u)) > 0.0:
                # Lost the object to one side (or passed it): lift and approach again.
                self._back_goal = np.array([*mover.pos[:2], push_z + _CLEAR_HEIGHT_M])
                self._advance(PushPhase.LIFT, observation.stamp)
        elif phase is PushPhase.RETREAT:
            at = mover.step(self._back_goal, self._yaw, dt)
            if at and (np.linalg.norm(tool - self._back_goal) <= _REACHED_M or elapsed >= _PHASE_TIMEOUT_S):
                self._back_goal = self._back_goal + [0.0, 0.0, _CLEAR_HEIGHT_M]
                self._advance(PushPhase.LIFT, observation.stamp)
        elif phase is PushPhase.LIFT:
            at = mover.step(self._back_goal, self._yaw, dt)
            if at and (np.linalg.norm(tool - self._back_goal) <= _REACHED_M or elapsed >= _PHASE_TIMEOUT_S):
                finished = remaining <= p.stop_tolerance_m * 1.5
                self._advance(PushPhase.DONE if finished else PushPhase.APPROACH, observation.stamp)
        else:
            mover.step(mover.pos, mover.yaw, dt)
        closed = info.gripper_command_range[1]
        return Action(arm_positions=mover.q_cmd.copy(), gripper=closed)
