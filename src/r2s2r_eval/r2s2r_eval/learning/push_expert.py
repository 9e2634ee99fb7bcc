"""A privileged state-feedback push expert for demonstrations: reads the simulator's true object pose.

The push reference policy carries a hidden set-point, a push direction fixed at the approach, and phase
timers, none of which a cloned policy observes; a learner that imitates it must guess them.  This expert is
memoryless like the pick-and-place one (:mod:`r2s2r_eval.learning.demo_expert`): each command follows from
the tool, the object and the target as they are now, so equal observations carry equal labels and a state
pushed off the path (DART noise) is labelled with the way back: lift, go behind the object again, push.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from r2s2r_sim.world.kinematics import KinematicArm, tool_down_rotation

from r2s2r_eval.policies.scripted.motion import tool_yaw
from r2s2r_eval.policies.scripted.scene import body_geom, half_height
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, Policy, PolicyError

if TYPE_CHECKING:
    from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["PushExpert"]

# Half the thickness (m) of the closed fingers along the push; the clearance (m) behind the object before
# the fingers come down; the height (m) of the tool centre above the object's bottom while pushing (the
# fingertips are 15 mm below it) and the height above that to travel at.  As the push reference policy.
_FINGER_HALF_M = 0.008
_STANDOFF_M = 0.025
_PUSH_HEIGHT_M = 0.02
_CLEAR_HEIGHT_M = 0.09
# Below this height (m) over the push height the tool counts as down at the object.
_LOW_M = 0.03
# Push window, behind the contact point along the push line (m) and across it: inside it the tool pushes;
# outside it, low, it rises and goes round.
_BEHIND_SLACK_M = 0.015
_INSIDE_M = 0.01
_MAX_LATERAL_M = 0.015
# Horizontal distance (m) from the pre-push point within which the tool descends (from above) or keeps
# descending (once low).
_ALIGNED_XY = 0.01
_DESCENT_CORRIDOR_XY = 0.02
# The push set-point leads the contact point by this much (m) along the line.
_PUSH_LEAD_M = 0.03
# Largest Cartesian step (m) between the measured tool and the set-point: 0.04 m moves the arm at about
# 0.15 m/s, 0.016 m while pushing at about the reference's 0.06 m/s, slow enough that the object stops
# where the fingers leave it on a slippery table.
_TRAVEL_STEP_M = 0.04
_PUSH_STEP_M = 0.016
_JOINT_LEAD_RAD = 0.3
# The object is at the target this close (m): the tool rises and leaves it to settle.
_PLACED_M = 0.015
# The object counts as at rest once it moved less than this (m) over each of the last two steps.
_AT_REST_M = 0.001


class PushExpert(Policy):
    """Memoryless push to the target from the true object pose (sim only; see the module docstring).

    Rules, evaluated on every call from the current state, with the gripper closed throughout:

    0. object at the target: rise straight up and leave it (done once it rests and the tool is clear);
    1. tool down behind the object on its line to the target: push along the line;
    2. tool down anywhere else: keep descending if over the pre-push point, else rise straight up;
    3. tool up: go above the pre-push point behind the object, then descend onto it.
    """

    requires = frozenset({ObservationKind.JOINT_STATE})

    def __init__(self, world: SimWorld) -> None:
        """Bind the expert to ``world`` (read-only: object and target poses, kinematics on a private copy).

        Raises:
            PolicyError: the world has no task, tool site or gripper, or its object is not a shape.
        """
        super().__init__()
        cfg = world.config
        if cfg.task is None or cfg.robot.ee_site is None or cfg.robot.gripper is None:
            raise PolicyError("privileged push expert: the world needs a task, robot.ee_site and a gripper")
        prefix = cfg.robot.prefix
        self.world = world
        self.arm = KinematicArm(
            world.model, tuple(prefix + n for n in cfg.robot.arm_joints), prefix + cfg.robot.ee_site
        )
        self.object_body = cfg.task.object_body
        self.target_site = cfg.task.target_site
        g = body_geom(world.model, self.object_body, "privileged push expert")
        self.radius = float(world.model.geom_size[g][0])
        self._half_height = half_height(world.model, g)
        self._info: EpisodeInfo | None = None
        self.rule = ""

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode."""
        self._info = info
        self._done = False
        self._last: np.ndarray | None = None
        self._still_steps = 0

    @property
    def done(self) -> bool:
        """True once the object rests at the target with the tool clear above it."""
        return self._done

    def _plan(self, tool: np.ndarray, obj: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, str]:
        """Goal tool position and the rule that chose it."""
        push_z = obj[2] - self._half_height + _PUSH_HEIGHT_M
        clear_z = push_z + _CLEAR_HEIGHT_M
        to_target = target[:2] - obj[:2]
        remaining = float(np.linalg.norm(to_target))
        if remaining < _PLACED_M:
            return np.array([tool[0], tool[1], clear_z]), "leave"
        u = to_target / remaining
        contact = self.radius + _FINGER_HALF_M
        behind = obj[:2] - u * (contact + _STANDOFF_M)
        rel = tool[:2] - obj[:2]
        along = float(np.dot(rel, u))
        lateral = abs(float(u[0] * rel[1] - u[1] * rel[0]))
        to_behind = float(np.linalg.norm(tool[:2] - behind))
        if tool[2] < push_z + _LOW_M:
            in_window = -(contact + _STANDOFF_M + _BEHIND_SLACK_M) <= along <= -(contact - _INSIDE_M)
            if in_window and lateral <= _MAX_LATERAL_M:
                return np.array([*(obj[:2] - u * (contact - _PUSH_LEAD_M)), push_z]), "push"
            if to_behind <= _DESCENT_CORRIDOR_XY:
                return np.array([*behind, push_z]), "descend"
            return np.array([tool[0], tool[1], clear_z]), "rise"
        if to_behind <= _ALIGNED_XY:
            return np.array([*behind, push_z]), "descend"
        return np.array([*behind, clear_z]), "approach"

    def act(self, observation: Observation) -> Action:
        """Command toward the goal of the rule that applies now."""
        if self._info is None:
            raise PolicyError("privileged push expert: act() called before reset()")
        q = observation.positions(self._info.arm_joint_names)
        tool, rot = self.arm.fk(q)
        obj, _ = self.world.body_pose(self.object_body)
        target, _ = self.world.site_pose(self.target_site)
        goal, self.rule = self._plan(tool, obj, target)
        moved = np.inf if self._last is None else float(np.linalg.norm(obj - self._last))
        self._still_steps = self._still_steps + 1 if moved < _AT_REST_M else 0
        self._last = obj.copy()
        risen = tool[2] > goal[2] - _LOW_M
        self._done = self._done or (self.rule == "leave" and risen and self._still_steps >= 2)
        # Fingers side by side across the push line, at whichever of the two equivalent yaws is nearer.
        yaw_now = tool_yaw(rot)
        line = target[:2] - obj[:2]
        yaw = math.atan2(line[1], line[0]) + math.pi / 2
        yaw += math.pi * round((yaw_now - yaw) / math.pi)
        step = goal - tool
        dist = float(np.linalg.norm(step))
        lead = _PUSH_STEP_M if self.rule == "push" else _TRAVEL_STEP_M
        setpoint = goal if dist <= lead else tool + step * (lead / dist)
        q_des, _ = self.arm.ik(setpoint, tool_down_rotation(yaw), q)
        q_cmd = q + np.clip(q_des - q, -_JOINT_LEAD_RAD, _JOINT_LEAD_RAD)
        closed = self._info.gripper_command_range[1]
        return Action(arm_positions=q_cmd, gripper=float(closed))
