"""The grasp trial of ``r2s2r world check``: approach, close and lift the task object from the table.

The squeeze test (:func:`r2s2r_sim.authoring.grasp_fit.grip_hold`) closes the fingers on an object placed
at the tool frame, where fingers too narrow for it interpenetrate it and pin it.  Here the arm's own
servos carry the open gripper above the object where it lies on the table, lower it tool-down to the
grasp, close and lift, as the reference policy does (grasp at the object's centre, approach from 6 cm
above, lift 10 cm); the object is held when it rose with the tool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from r2s2r_sim.world.kinematics import REACHED_M, KinematicArm, tool_down_rotation
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["GraspTrial", "grasp_trial"]

_APPROACH_DZ = 0.06
_LIFT_DZ = 0.10
# Simulated time (s) given to each move, to the closing and to the lift.
_MOVE_S = 1.2
_CLOSE_S = 0.8
# The object counts as held when it rose by at least this share of the lift.
_HELD_SHARE = 0.8


@dataclass(frozen=True)
class GraspTrial:
    """One approach, close and lift.

    Attributes:
        xy: where the object lay (m, world frame).
        reached: inverse kinematics reached every waypoint tool-down.
        lifted_m: how far the object rose while the tool lifted ``_LIFT_DZ``.
    """

    xy: tuple[float, float]
    reached: bool
    lifted_m: float

    @property
    def held(self) -> bool:
        """The object rose with the tool (within the slip allowed)."""
        return self.reached and self.lifted_m >= _HELD_SHARE * _LIFT_DZ

    @property
    def slip_m(self) -> float:
        """How much less than the tool the object rose (m)."""
        return _LIFT_DZ - self.lifted_m

    def text(self) -> str:
        """One line for the report."""
        where = f"({self.xy[0]:.3f}, {self.xy[1]:.3f})"
        if not self.reached:
            return f"at {where} the arm does not reach the grasp tool-down"
        verdict = "held" if self.held else "slipped"
        return (
            f"at {where}: {verdict}, lifted {1000 * self.lifted_m:.0f} of {1000 * _LIFT_DZ:.0f} mm "
            f"(slip {1000 * self.slip_m:.0f} mm, {1000 * _HELD_SHARE * _LIFT_DZ:.0f} mm lift needed)"
        )


def grasp_trial(world: SimWorld, x: float, y: float) -> GraspTrial:
    """Approach, close and lift the task object placed at ``x, y`` (yaw 0) in ``world`` (reset first)."""
    robot, task = world.config.robot, world.config.task
    gripper = robot.gripper
    assert task is not None and gripper is not None and robot.ee_site is not None
    world.reset(0)
    world.place_task_object(x, y, 0.0)
    world.set_gripper_command(gripper.command_range[0], immediate=True)
    world.step(1)
    arm = KinematicArm(
        world.model, tuple(robot.prefix + j for j in robot.arm_joints), robot.prefix + robot.ee_site
    )
    q = world.joint_state()[0][: len(robot.arm_joints)].copy()
    pos, rot = arm.fk(q)
    first = world.model.joint(robot.prefix + robot.arm_joints[0]).id
    axis = world.data.xanchor[first][:2]
    obj = world.body_pose(task.object_body)[0]
    # The home tool yaw turned with the arm toward the object, then to the nearest pair of the cube's faces.
    turn = math.atan2(y - axis[1], x - axis[0]) - math.atan2(pos[1] - axis[1], pos[0] - axis[0])
    yaw = math.atan2(rot[1, 1], rot[0, 1]) + turn
    face = round(yaw / (math.pi / 2)) * (math.pi / 2)
    # the cube's other pair of faces, a quarter turn either way, where the wrist runs out of range
    candidates = [tool_down_rotation(face + k * math.pi / 2) for k in (0, 1, -1)]
    down = next(
        (
            c
            for c in candidates
            if arm.ik(np.array([x, y, obj[2] + _APPROACH_DZ]), c, q, iterations=200)[1] < REACHED_M
        ),
        candidates[0],
    )
    steps = {
        "move": int(_MOVE_S / world.model.opt.timestep),
        "close": int(_CLOSE_S / world.model.opt.timestep),
    }
    reached = True
    before = float(obj[2])
    for dz, close in ((_APPROACH_DZ, False), (0.0, True), (_LIFT_DZ, False)):
        q, err = arm.ik(np.array([x, y, obj[2] + dz]), down, q, iterations=200)
        reached &= err < REACHED_M
        if dz == _LIFT_DZ:
            before = float(world.body_pose(task.object_body)[0][2])
        world.set_arm_command(q)
        world.step(steps["move"])
        if close:
            world.set_gripper_command(gripper.command_range[1])
            world.step(steps["close"])
    lifted = float(world.body_pose(task.object_body)[0][2]) - before
    return GraspTrial(xy=(x, y), reached=bool(reached), lifted_m=lifted)
