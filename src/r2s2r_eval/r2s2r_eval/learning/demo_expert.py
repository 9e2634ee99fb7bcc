"""A privileged state-feedback expert for demonstrations: reads the simulator's true object pose.

Demonstrations are recorded in simulation only, so the expert may read simulator state.  Unlike
the reference policy, which perceives the cube once and then plays a timed script from an internal
set-point, this expert is *memoryless*: every command is a function of what the learner also observes
(joint positions, finger opening, the object in the image) plus the true object and target poses.  That is
what behaviour cloning can imitate: equal observations carry equal labels, so there is no hidden phase or
timer to guess, and a state pushed off the path (DART noise) is labelled with the way back, including a
re-grasp after a missed one.

The tool keeps its current yaw (a 4 cm cube is grasped from any yaw with the open fingers' 8 cm), so the
learner need not read the cube's yaw from a 96x72 image.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import mujoco
import numpy as np
from r2s2r_sim.tasks.config import TaskType
from r2s2r_sim.world.kinematics import KinematicArm, reachable_tool_down_z, tool_down_rotation

from r2s2r_eval.learning.push_expert import PushExpert
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, Policy, PolicyError

if TYPE_CHECKING:
    from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["PrivilegedExpert", "privileged_expert"]

# Heights (m) of the tool centre point: above the grasp point before descending, above the target when
# carrying, above the target when releasing (the same as the reference policy's).
_APPROACH_HEIGHT = 0.10
_CARRY_Z_ABOVE_TARGET = 0.18
_RELEASE_HEIGHT = 0.05
# A cube this close (m) to the target, horizontally and in height, is placed: the expert leaves it there
# (the task succeeds only once it rests, released, for the settle time) and rises this high above it.
_PLACED_M = 0.03
_LEAVE_HEIGHT = 0.15
# Largest Cartesian step (m) between the measured tool and the commanded set-point: the servos lag, so the
# command leads the arm; 0.04 m at 10 Hz moves the arm at roughly the reference policy's 0.15 m/s.
_LEAD_M = 0.04
_JOINT_LEAD_RAD = 0.3
# Alignment tolerances (m): horizontal, before descending; kept while descending; at the grasp point,
# before closing.  The open fingers clear a 4 cm cube by 2 cm a side, so a grasp 1.5 cm off still holds,
# and a learner whose image-read cube position is ~1 cm off near the gripper still sees a clear "close".
_ALIGNED_XY = 0.01
_DESCENT_CORRIDOR_XY = 0.02
_AT_GRASP_XY = 0.015
_AT_GRASP_Z = 0.012
# Over the target and at the release point (m): the bin accepts the cube 6 cm around its centre.
_OVER_TARGET_XY = 0.02
_AT_TARGET = 0.025
# Finger opening (m) fractions of the fully open command: below _CLOSED_ON_NOTHING the fingers met each
# other (missed grasp); the cube's half width sits between.  A hinged jaw or a linkage opens in radians,
# not in proportion to the gap: one closed on a 4 cm cube can sit at 0.16 of its range (xArm's linkage),
# while closed on nothing it reaches its closed end, so only the last _JAW_MET of the range means a miss.
_CLOSED_ON_NOTHING = 0.2
_JAW_MET = 0.05
_CLOSING = 0.95
# Finger speed, in gripper ranges per second, below which a closing grasp has settled on the cube (0.01 m/s
# for 4 cm sliding fingers); in the range's units, so a hinged jaw jiggling while it carries stays settled.
_FINGERS_AT_REST = 0.25
# How far a hinged jaw may open per step while it lets go, in gripper ranges.  A jaw swings about its hinge:
# opened at full servo speed, a cube that its pads hold fast (soft pads closed deep into it, sticky friction)
# swings out with it and lands on the bin's wall; opened over a few steps, the cube parts from the pads and
# drops where it was.  Sliding fingers part straight and open at once.
_JAW_RELEASE_STEP = 0.15
# The cube counts as at rest once it has moved less than this (m) over each of the last two steps: released
# from the release height it falls into the bin at ~0.7 m/s and bounces, and the task's settle period
# counts from the done, so a done on a cube not yet at rest fails a good placement by a sample.
_CUBE_AT_REST_M = 0.001


class _GravitySag:
    """How far each arm joint's position servo sags under gravity at ``q``: g(q) / kp, to command beyond.

    A servo without gravity compensation settles where ``kp * (q_cmd - q) = g(q)`` (MuJoCo's bias force at
    rest), so a goal reached by inverse kinematics is missed by g(q) / kp: about 1.5 cm at the xArm7's
    tool.  The world's own compensation (bodies' ``gravcomp``) is subtracted, so an arm that has it, like
    the bundled one, gets none; so do joints without a position servo (a force motor).
    """

    def __init__(self, model: mujoco.MjModel, joints: tuple[str, ...]) -> None:
        self.model, self.data = model, mujoco.MjData(model)
        ids = [model.joint(n).id for n in joints]
        self.qadr, self.dofadr = model.jnt_qposadr[ids], model.jnt_dofadr[ids]
        self.inv_kp = np.zeros(len(ids))
        for a in range(model.nu):
            if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):
                j, kp = int(model.actuator_trnid[a, 0]), float(model.actuator_gainprm[a, 0])
                position = int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
                if j in ids and position and kp > 0 and model.actuator_biasprm[a, 1] == -kp:
                    self.inv_kp[ids.index(j)] = 1.0 / kp

    def offset(self, q: np.ndarray) -> np.ndarray:
        """Joint offsets (rad) that make the servos settle at ``q``."""
        if not self.inv_kp.any():
            return np.zeros_like(self.inv_kp)
        self.data.qpos[self.qadr] = q
        mujoco.mj_forward(self.model, self.data)
        gravity = self.data.qfrc_bias[self.dofadr] - self.data.qfrc_gravcomp[self.dofadr]
        return gravity * self.inv_kp


class PrivilegedExpert(Policy):
    """Memoryless pick-and-place from the true cube pose (sim only; see the module docstring).

    Rules, evaluated on every call from the current state:

    0. cube at the target and not held: open and rise away from it (leave it to settle);
    1. cube between closed fingers (held): lift to the carry height, carry over the target, lower, open;
    2. fingers closed on nothing (missed) or closing away from the cube: open and rise;
    3. tool at the grasp point: close;
    4. otherwise open: rise if low and not above the cube, go above the cube, descend onto it.
    """

    requires = frozenset({ObservationKind.JOINT_STATE})

    def __init__(self, world: SimWorld, *, grasp_offset_m: float = 0.0) -> None:
        """Bind the expert to ``world`` (read-only: object and target poses, kinematics on a private copy).

        Raises:
            PolicyError: the world has no task, tool site or gripper.
        """
        super().__init__()
        cfg = world.config
        if cfg.task is None or cfg.robot.ee_site is None or cfg.robot.gripper is None:
            raise PolicyError("privileged expert: the world needs a task, robot.ee_site and a gripper")
        prefix = cfg.robot.prefix
        self.world = world
        self.arm = KinematicArm(
            world.model, tuple(prefix + n for n in cfg.robot.arm_joints), prefix + cfg.robot.ee_site
        )
        self.finger_names = tuple(cfg.robot.gripper.joints)
        self._sag = _GravitySag(world.model, tuple(prefix + n for n in cfg.robot.arm_joints))
        # Sliding fingers open in metres, so the cube's width bounds a holding opening; a hinged jaw opens in
        # radians, and any opening between "met each other" and "open" at rest counts.
        self._sliding = all(
            int(world.model.jnt_type[world.model.joint(prefix + n).id]) == int(mujoco.mjtJoint.mjJNT_SLIDE)
            for n in self.finger_names
        )
        self.object_body = cfg.task.object_body
        self.target_site = cfg.task.target_site
        self.grasp_offset_m = grasp_offset_m
        geoms = [
            g
            for g in range(world.model.ngeom)
            if int(world.model.geom_bodyid[g]) == world.model.body(self.object_body).id
        ]
        self.half_size = float(world.model.geom_size[geoms[0]][2]) if geoms else 0.02
        self._info: EpisodeInfo | None = None
        self.rule = ""
        self._carry_z: dict[tuple[float, ...], float] = {}

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode."""
        self._info = info
        self._released = False
        self._last_cube: np.ndarray | None = None
        self._still_steps = 0

    @property
    def done(self) -> bool:
        """True once the cube lies at rest at the target, let go, with the fingers at rest.

        Not at the first open command: the task's settle period counts from the done, and a cube still
        falling into the bin would eat into it.
        """
        return self._released

    def _plan(
        self, tool: np.ndarray, opening: float, settled: bool, yaw: float, q: np.ndarray
    ) -> tuple[np.ndarray, float, str]:
        """Goal tool position, gripper command and the rule that chose them."""
        assert self._info is not None
        open_cmd, closed_cmd = self._info.gripper_command_range
        full = abs(open_cmd - closed_cmd)
        frac = abs(opening - closed_cmd) / full if full > 0 else 1.0
        cube, _ = self.world.body_pose(self.object_body)
        target, _ = self.world.site_pose(self.target_site)
        grasp = cube + np.array([0.0, 0.0, self.grasp_offset_m])
        to_grasp = grasp - tool
        dxy = float(np.linalg.norm(to_grasp[:2]))
        cube_in_hand = float(np.linalg.norm(cube - tool)) < self.half_size + 0.01
        # Closed as far as the cube lets the fingers (its width face-on, up to its diagonal), with the cube
        # between them, and the fingers at rest.
        widest = (math.sqrt(2.0) * self.half_size + 0.003) / max(full, 1e-9) if self._sliding else _CLOSING
        met = _CLOSED_ON_NOTHING if self._sliding else _JAW_MET
        held = cube_in_hand and met < frac < widest and settled
        carry_z = self._reachable_carry_z(target, yaw, q)
        release = target + np.array([0.0, 0.0, _RELEASE_HEIGHT])
        at_release = float(np.linalg.norm(release - tool)) < _AT_TARGET
        if not self._sliding and cube_in_hand and at_release and frac > met:
            # Letting go with a hinged jaw: a step wider than it is now, until open (see _JAW_RELEASE_STEP).
            wider = min(1.0, frac + _JAW_RELEASE_STEP)
            return release, closed_cmd + (open_cmd - closed_cmd) * wider, "release"
        if not held and float(np.linalg.norm(cube - target)) < _PLACED_M:
            return np.array([tool[0], tool[1], target[2] + _LEAVE_HEIGHT]), open_cmd, "leave"
        if held:
            if float(np.linalg.norm(target[:2] - tool[:2])) > _OVER_TARGET_XY:
                if tool[2] < carry_z - 0.03:
                    return np.array([tool[0], tool[1], carry_z]), closed_cmd, "lift"
                return np.array([target[0], target[1], carry_z]), closed_cmd, "carry"
            if at_release:
                return release, open_cmd, "release"
            return release, closed_cmd, "lower"
        closing = frac < _CLOSING
        at_grasp = dxy < _AT_GRASP_XY and abs(to_grasp[2]) < _AT_GRASP_Z
        # Once the fingers move, the cube may shift a little: keep closing within looser bounds.
        if closing and not (frac > met and dxy < 2 * _AT_GRASP_XY and abs(to_grasp[2]) < 0.02):
            up = max(tool[2], grasp[2] + _APPROACH_HEIGHT)
            return np.array([tool[0], tool[1], up]), open_cmd, "regrasp"
        if at_grasp or closing:
            return grasp, closed_cmd, "close"
        above = grasp + np.array([0.0, 0.0, _APPROACH_HEIGHT])
        # Below the approach height the tool is descending: it corrects a small horizontal error on the
        # way down rather than going back up, so a learner's centimetre of error does not make it dither.
        descending = tool[2] < above[2] - 0.01
        if dxy <= _ALIGNED_XY or (descending and dxy <= _DESCENT_CORRIDOR_XY):
            return grasp, open_cmd, "descend"
        if descending and tool[2] < grasp[2] + 0.5 * _APPROACH_HEIGHT:
            return np.array([tool[0], tool[1], above[2]]), open_cmd, "rise"
        return above, open_cmd, "approach"

    def _reachable_carry_z(self, target: np.ndarray, yaw: float, q: np.ndarray) -> float:
        """The carry height above ``target``: the nominal one, or as high as the arm reaches there.

        A small arm cannot carry as high as a large one; a goal above its reach would leave it lifting.  Kept
        per target: what the arm reaches above a fixed point does not depend on the state, so the expert
        stays memoryless.
        """
        key = tuple(np.round(target, 4))
        if key not in self._carry_z:
            high, low = target[2] + _CARRY_Z_ABOVE_TARGET, target[2] + _RELEASE_HEIGHT + 0.03
            self._carry_z[key] = reachable_tool_down_z(self.arm, target, high, low, yaw, q)
        return self._carry_z[key]

    def act(self, observation: Observation) -> Action:
        """Command toward the goal of the rule that applies now."""
        if self._info is None:
            raise PolicyError("privileged expert: act() called before reset()")
        q = observation.positions(self._info.arm_joint_names)
        opening = float(np.mean(observation.positions(self.finger_names)))
        idx = [observation.joint_names.index(n) for n in self.finger_names]
        open_cmd, closed_cmd = self._info.gripper_command_range
        at_rest = _FINGERS_AT_REST * abs(open_cmd - closed_cmd)
        settled = float(np.max(np.abs(observation.joint_velocities[idx]))) < at_rest
        tool, rot = self.arm.fk(q)
        yaw = math.atan2(rot[1, 1], rot[0, 1])
        goal, gripper, self.rule = self._plan(tool, opening, settled, yaw, q)
        cube, _ = self.world.body_pose(self.object_body)
        moved = np.inf if self._last_cube is None else float(np.linalg.norm(cube - self._last_cube))
        self._still_steps = self._still_steps + 1 if moved < _CUBE_AT_REST_M else 0
        self._last_cube = cube.copy()
        self._released = self._released or (self.rule == "leave" and settled and self._still_steps >= 2)
        step = goal - tool
        dist = float(np.linalg.norm(step))
        setpoint = goal if dist <= _LEAD_M else tool + step * (_LEAD_M / dist)
        q_des, _ = self.arm.ik(setpoint, tool_down_rotation(yaw), q)
        q_cmd = q + np.clip(q_des - q, -_JOINT_LEAD_RAD, _JOINT_LEAD_RAD) + self._sag.offset(q_des)
        return Action(arm_positions=q_cmd, gripper=float(gripper))


def privileged_expert(world: SimWorld, *, grasp_offset_m: float = 0.0) -> Policy:
    """The privileged expert of the world's task: pick-and-place (this module's) or push.

    Raises:
        PolicyError: the world's task has no privileged expert (names the task).
    """
    task = world.config.task
    if task is not None and task.type is TaskType.PUSH:
        return PushExpert(world)
    if task is None or task.type is TaskType.PICK_PLACE:
        return PrivilegedExpert(world, grasp_offset_m=grasp_offset_m)
    raise PolicyError(
        f"privileged expert: world {world.config.id!r} has a {task.type.value!r} task; the privileged "
        "experts do pick-and-place and push (use the task's reference policy as the expert)"
    )
