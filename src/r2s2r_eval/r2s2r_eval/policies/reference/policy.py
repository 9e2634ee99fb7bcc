"""Scripted pick-and-place from RGB-D perception and inverse kinematics on a kinematic copy of the arm."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import mujoco
import numpy as np
from r2s2r_sim.world.kinematics import KinematicArm, reachable_tool_down_z, tool_down_rotation

from r2s2r_eval.policies.reference.config import ReferenceParams
from r2s2r_eval.policies.reference.grip import GripMonitor, GripState, closure_fraction
from r2s2r_eval.policies.reference.perception import CubeEstimate, PixelFilter, estimate_cube
from r2s2r_eval.policies.scripted.base import PhasedPolicy
from r2s2r_eval.policies.scripted.camera import nominal_camera
from r2s2r_eval.policies.scripted.motion import CartesianMover
from r2s2r_eval.policies.scripted.scene import arm_scene, body_geom, half_height
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, PolicyError

__all__ = ["Phase", "ReferencePolicy", "SceneModel", "scene_model"]

# The set-point's Cartesian acceleration limit at speed = 1 (its speed limits are the mover's).
_LINEAR_ACCEL = 0.6  # m/s^2
# Heights (m) of the tool centre point: above the cube before descending, when carrying, above the bin
# target when releasing (the cube then drops ~2.5 cm onto the bin floor) and after retreating.
_APPROACH_HEIGHT = 0.12
_CARRY_Z_ABOVE_TARGET = 0.18
_RELEASE_HEIGHT = 0.05
_RETREAT_HEIGHT = 0.2
# The test lift: this high (m), at this fraction of the speed, then held this long (s) while the finger
# joint is watched for creep.
_TEST_LIFT_M = 0.03
_TEST_LIFT_SPEED = 0.3
_TEST_HOLD_S = 0.3
# A motion phase ends when the measured tool position is this close to its goal, or after the timeout.
_REACHED_M = 0.01
_IK_REACHED_M = 0.003  # an IK solution this close to its goal reaches it
_PHASE_TIMEOUT_S = 4.0
_GRIPPER_DWELL_S = 0.8
# After a failed grasp the arm waits this long (s) clear of the scene, so the next frame shows the object.
_LOOK_DWELL_S = 1.2
# Steady-state tool error (gravity sag of stiff-less joints) is integrated into the IK goal at this gain per
# control period once the set-point has arrived, up to this many metres.
_SAG_GAIN = 0.5
_SAG_LIMIT_M = 0.04
# A cube candidate whose top the camera's line of sight reaches on the arm, within this (m), is the arm.
_ON_ARM_M = 0.03
# The policy perceives the cube where it rests (on the table, on a distractor); higher is something else.
_FLOAT_M = 0.1


class Phase(enum.Enum):
    """Steps of the pick-and-place script."""

    PERCEIVE = "perceive"
    APPROACH = "approach"
    DESCEND = "descend"
    CLOSE = "close"
    TEST_LIFT = "test_lift"
    LIFT = "lift"
    TRANSFER = "transfer"
    LOWER = "lower"
    OPEN = "open"
    RETREAT = "retreat"
    DONE = "done"  # released and retreated, or given up
    RECOVER = "recover"


_NEXT = {
    Phase.PERCEIVE: Phase.APPROACH,
    Phase.APPROACH: Phase.DESCEND,
    Phase.DESCEND: Phase.CLOSE,
    Phase.CLOSE: Phase.TEST_LIFT,
    Phase.TEST_LIFT: Phase.LIFT,
    Phase.LIFT: Phase.TRANSFER,
    Phase.TRANSFER: Phase.LOWER,
    Phase.LOWER: Phase.OPEN,
    Phase.OPEN: Phase.RETREAT,
    Phase.RETREAT: Phase.DONE,
    Phase.RECOVER: Phase.PERCEIVE,
}
# Phases in which the object should be in the gripper: a slip there sends the arm back for it.
_CARRYING = frozenset({Phase.TEST_LIFT, Phase.LIFT, Phase.TRANSFER, Phase.LOWER})


@dataclass(frozen=True)
class SceneModel:
    """Static knowledge of a world taken from its MJCF: the arm's kinematics, the cube and the target."""

    arm: KinematicArm
    base_pose: np.ndarray  # 4x4 base pose in the model's world frame
    cube_colour: tuple[float, float, float]
    cube_half_size: float
    cube_rest_z: float  # the cube's centre height where the world file rests it on the table (m)
    target: np.ndarray  # target site position in the world (m)
    gripper_joint: str | None  # the gripper's first joint as on /joint_states (None: no gripper)
    robot_bodies: frozenset[int]  # the arm's bodies in the model, to tell it from the cube in an image
    joint_qpos_adr: tuple[tuple[str, int], ...]  # (name on /joint_states, qpos address) of each robot joint


@lru_cache(maxsize=4)
def scene_model(world_dir: Path) -> SceneModel:
    """What the reference policy knows of the world in ``world_dir``, read once per world (cached)."""
    scene = arm_scene(world_dir, "reference")
    cfg, task = scene.config, scene.task
    model, data, arm, base = scene.model, scene.data, scene.arm, scene.base_pose
    geom = body_geom(model, task.object_body, "reference")
    rgba = model.geom_rgba[geom]
    if int(model.geom_matid[geom]) >= 0:
        rgba = model.mat_rgba[model.geom_matid[geom]]
    return SceneModel(
        arm=arm,
        base_pose=base,
        cube_colour=(float(rgba[0]), float(rgba[1]), float(rgba[2])),
        cube_half_size=half_height(model, geom),
        cube_rest_z=float(data.xpos[model.body(task.object_body).id][2]),
        target=data.site_xpos[model.site(task.target_site).id].copy(),
        gripper_joint=None if cfg.robot.gripper is None else cfg.robot.gripper.joints[0],
        robot_bodies=scene.robot_bodies,
        joint_qpos_adr=tuple(
            (name, int(model.jnt_qposadr[model.joint(scene.prefix + name).id])) for name in scene.joint_names
        ),
    )


def _nearest_equivalent_yaw(yaw: float, reference: float) -> float:
    """The yaw ``yaw + k * pi/2`` closest to ``reference`` (a square grasp is symmetric by quarter turns)."""
    k = round((reference - yaw) / (math.pi / 2))
    return yaw + k * math.pi / 2


def _grasp_yaw(
    arm: KinematicArm,
    cube: np.ndarray,
    heights: tuple[float, ...],
    yaw: float,
    reference: float,
    q0: np.ndarray,
) -> float:
    """The equivalent grasp yaw nearest ``reference`` at which the tool reaches ``cube`` at every height.

    An arm whose wrist cannot roll all the way round (five joints, or a wrist stop) reaches some of the
    cube's four face pairs only; the nearest one is kept when none is reached.
    """
    nearest = _nearest_equivalent_yaw(yaw, reference)
    for k in (0, 1, -1, 2):
        candidate = nearest + k * math.pi / 2
        rot = tool_down_rotation(candidate)
        if all(
            arm.ik(np.array([cube[0], cube[1], z]), rot, q0, iterations=200)[1] < _IK_REACHED_M
            for z in heights
        ):
            return candidate
    return nearest


class ReferencePolicy(PhasedPolicy):
    """Scripted pick-and-place for any arm with a tool frame and a parallel gripper.

    See the cube, approach, descend, close, check the grasp, lift a little and watch the grip, lift, carry,
    lower, open, retreat.  Uses only observations (joint positions, RGB-D, intrinsics, camera and base
    poses) plus static scene knowledge from the world folder's MJCF (arm kinematics, the cube's colour and
    size, the target site, which joint is the gripper's).  Inverse kinematics runs on a separately compiled
    copy of the world model with its own ``MjData``.

    The grasp is judged from the measured gripper joint alone (:class:`GripMonitor`): fingers that close
    fully hold nothing, so the arm opens, rises, looks again and retries (at most ``max_regrasps`` times);
    fingers that creep closed during the test lift mark a weak grip, and the load is then carried at
    ``weak_grip_speed`` of the speed and acceleration (and slower again after each slip); fingers that close
    while carrying mean the object slipped out, and the arm goes back for it.  A steady tool error (joints
    that sag under gravity) is integrated into the IK goal so every phase ends at its goal.
    """

    params_type = ReferenceParams
    tasks = frozenset({"pick_place"})
    first_phase = Phase.PERCEIVE
    # Tool centre heights (m) above the target: carrying, and releasing (a subclass may place lower).
    carry_height_m = _CARRY_Z_ABOVE_TARGET
    release_height_m = _RELEASE_HEIGHT
    requires = frozenset(
        {
            ObservationKind.JOINT_STATE,
            ObservationKind.RGB,
            ObservationKind.DEPTH,
            ObservationKind.CAMERA_INFO,
            ObservationKind.CAMERA_POSE,
        }
    )

    def __init__(self, params: ReferenceParams | None = None, *, grip: GripMonitor | None = None) -> None:
        """Build the policy; the world model is loaded at the first :meth:`reset`."""
        super().__init__(params)
        self._p: ReferenceParams = self.params  # type: ignore[assignment]
        self._grip = grip if grip is not None else GripMonitor()

    def control_rate_hz(self) -> float:
        """Rate (Hz) the policy asks to be called at."""
        return self._p.control_rate_hz

    @property
    def estimate(self) -> CubeEstimate | None:
        """The (noisy) cube estimate of the current attempt, once perceived."""
        return self._estimate

    @property
    def regrasps(self) -> int:
        """Grasps retried so far this episode (after an empty grasp or a slip)."""
        return self._regrasps

    @property
    def carry_scale(self) -> float:
        """Scale of the carrying speed and acceleration now: 1, or less after a weak grip or a slip."""
        return self._carry_scale

    @property
    def events(self) -> tuple[tuple[float, str], ...]:
        """``(stamp, what)`` of each grasp judgement: ``grasped``, ``empty``, ``weak`` or ``slipped``."""
        return tuple(self._events)

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode: load the scene model, draw this episode's perception noise."""
        self._start_script(info, phase_start=math.nan)
        self._scene = scene_model(Path(info.world_dir))
        self._rng = info.rng()
        self._noise = self._rng.normal(0.0, self._p.perception_noise_m, size=2)
        self._estimate: CubeEstimate | None = None
        self._grasp_yaw = 0.0
        self._sag = np.zeros(3)
        self._gripper = info.gripper_command_range[0]
        self._world_to_model = np.eye(4)
        self._held: list[tuple[float, float]] = []  # (stamp, closure) since the grasp was confirmed
        self._regrasps = 0
        self._carry_scale = 1.0
        self._recover_from = np.zeros(3)
        self._approach_z = self._carry_z = self._retreat_z = math.nan
        self._events: list[tuple[float, str]] = []

    # ------------------------------------------------------------------------------------------ script

    def _goal(self, phase: Phase) -> tuple[np.ndarray, float]:
        """Goal tool position (model world frame) and gripper command of a motion or gripper phase."""
        assert self._estimate is not None and self._info is not None
        cube = self._estimate.position
        target = self._target()
        open_cmd, closed_cmd = self._info.gripper_command_range
        grasp = cube + np.array([0.0, 0.0, self._p.grasp_offset_m])
        carry_z = self._carry_z
        goals = {
            Phase.APPROACH: (np.array([grasp[0], grasp[1], self._approach_z]), open_cmd),
            Phase.DESCEND: (grasp, open_cmd),
            Phase.CLOSE: (grasp, closed_cmd),
            Phase.TEST_LIFT: (grasp + [0.0, 0.0, _TEST_LIFT_M], closed_cmd),
            Phase.LIFT: (np.array([grasp[0], grasp[1], carry_z]), closed_cmd),
            Phase.TRANSFER: (np.array([target[0], target[1], carry_z]), closed_cmd),
            Phase.LOWER: (target + [0.0, 0.0, self.release_height_m], closed_cmd),
            Phase.OPEN: (target + [0.0, 0.0, self.release_height_m], open_cmd),
            Phase.RETREAT: (np.array([target[0], target[1], self._retreat_z]), open_cmd),
            Phase.DONE: (np.array([target[0], target[1], self._retreat_z]), open_cmd),
            Phase.RECOVER: (self._recover_from, open_cmd),
        }
        pos, grip = goals[phase]
        return np.asarray(pos, dtype=np.float64), float(grip)

    def _target(self) -> np.ndarray:
        """Where the cube's centre goes (model world frame, m): the task's target site."""
        return self._scene.target

    def _speed_scale(self) -> float:
        """Speed scale of the current phase: the load slows carrying, the test lift is slow."""
        if self._phase is Phase.TEST_LIFT:
            return _TEST_LIFT_SPEED * self._carry_scale
        if self._phase in _CARRYING:
            return self._carry_scale
        return 1.0

    def _perceive(self, obs: Observation) -> None:
        if obs.rgb is None or obs.depth is None or obs.camera_k is None or obs.camera_pose is None:
            raise PolicyError("reference policy: the observation lacks rgb, depth, camera_k or camera_pose")
        scene = self._scene
        camera_k, camera_pose = obs.camera_k, obs.camera_pose
        if self._p.assume_camera_of:
            height, width = obs.rgb.shape[:2]
            camera_k, camera_pose = nominal_camera(self._p.assume_camera_of, width, height)
        # Observed world frame -> model world frame, through the observed and the modelled base pose.
        if obs.base_pose is not None:
            self._world_to_model = scene.base_pose @ np.linalg.inv(obs.base_pose)
        to_model = self._world_to_model
        eye = to_model[:3, :3] @ camera_pose[:3, 3] + to_model[:3, 3]
        self._pose_kinematic_copy(obs)

        def not_the_cube(centre: np.ndarray) -> bool:
            """A part of the arm (the camera's line of sight ends on it), or a blob floating in the air."""
            top = to_model[:3, :3] @ centre + to_model[:3, 3] + [0.0, 0.0, scene.cube_half_size]
            floating = top[2] - scene.cube_half_size > scene.cube_rest_z + _FLOAT_M
            return floating or self._sight_ends_on_arm(eye, top)

        found = estimate_cube(
            obs.rgb,
            obs.depth,
            camera_k,
            camera_pose,
            scene.cube_colour,
            scene.cube_half_size,
            reject=not_the_cube,
            drop=self._robot_pixels(obs.depth, camera_k, to_model[:3, :3] @ camera_pose[:3, :3], eye),
        )
        if found is None:
            raise PolicyError("reference policy: cube not found in the colour image")
        noisy = found.position.copy()
        noisy[:2] += self._noise
        noisy = self._world_to_model[:3, :3] @ noisy + self._world_to_model[:3, 3]
        self._estimate = CubeEstimate(position=noisy, yaw=found.yaw, pixels=found.pixels)

    def _pose_kinematic_copy(self, obs: Observation) -> None:
        """Pose the kinematic copy at every measured joint, fingers too, for line-of-sight tests."""
        arm = self._scene.arm
        adr = dict(self._scene.joint_qpos_adr)
        for name, value in zip(obs.joint_names, obs.joint_positions, strict=True):
            if name in adr:
                arm.data.qpos[adr[name]] = value
        mujoco.mj_kinematics(arm.model, arm.data)

    def _robot_pixels(
        self, depth: np.ndarray, k: np.ndarray, rot: np.ndarray, eye: np.ndarray
    ) -> PixelFilter:
        """Which pixels show the arm: along them the kinematic copy first hits a robot geom, at their depth.

        ``rot``: the optical frame's rotation in the model frame; ``eye``: its origin there.
        """
        model, data, robot = self._scene.arm.model, self._scene.arm.data, list(self._scene.robot_bodies)

        def drop(v: np.ndarray, u: np.ndarray) -> np.ndarray:
            rays = np.column_stack([(u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1], np.ones(len(u))])
            scale = np.linalg.norm(rays, axis=1)  # depth is along the optical axis; rays are cast normalised
            dirs = (rays / scale[:, None]) @ rot.T
            n = len(dirs)
            geom = np.full(n, -1, dtype=np.int32)
            dist = np.zeros(n)
            mujoco.mj_multiRay(model, data, eye, dirs.reshape(-1), None, 1, -1, geom, dist, None, n, 10.0)
            on_robot = (geom >= 0) & np.isin(model.geom_bodyid[np.maximum(geom, 0)], robot)
            measured = depth[v, u] * scale
            return on_robot & (np.abs(dist - measured) <= _ON_ARM_M)

        return drop

    def _sight_ends_on_arm(self, eye: np.ndarray, point: np.ndarray) -> bool:
        """Whether the camera at ``eye`` sees the arm at ``point`` (model frame).

        A part of an arm of the cube's colour can look like the cube in the colour mask, never in the arm's
        own geometry.
        """
        arm = self._scene.arm
        vec = point - eye
        dist = float(np.linalg.norm(vec))
        geom = np.full(1, -1, dtype=np.int32)
        hit = mujoco.mj_ray(arm.model, arm.data, eye, vec / dist, None, 1, -1, geom)
        return (
            0.0 <= hit <= dist + _ON_ARM_M and int(arm.model.geom_bodyid[geom[0]]) in self._scene.robot_bodies
        )

    def _plan_heights(self) -> None:
        """Approach, carry and retreat heights: the nominal ones, or as high as the arm reaches."""
        assert self._estimate is not None and self._mover is not None
        cube, target, q0 = self._estimate.position, self._target(), self._mover.q_cmd
        arm, yaw = self._scene.arm, self._grasp_yaw
        grasp_z = cube[2] + self._p.grasp_offset_m
        self._approach_z = reachable_tool_down_z(
            arm, cube, grasp_z + _APPROACH_HEIGHT, grasp_z + 0.04, yaw, q0
        )
        low = target[2] + self.release_height_m + 0.03
        self._carry_z = min(
            reachable_tool_down_z(arm, target, target[2] + self.carry_height_m, low, yaw, q0),
            reachable_tool_down_z(arm, cube, target[2] + self.carry_height_m, low, yaw, q0),
        )
        self._retreat_z = reachable_tool_down_z(arm, target, target[2] + _RETREAT_HEIGHT, low, yaw, q0)

    def _go(self, phase: Phase, stamp: float) -> None:
        self._phase = phase
        self._phase_start = stamp
        if self._mover is not None:
            self._mover.start_from_rest()

    def _closure(self, observation: Observation) -> float:
        joint = self._scene.gripper_joint
        if joint is None:
            return math.nan
        assert self._info is not None
        return closure_fraction(float(observation.positions((joint,))[0]), self._info.gripper_command_range)

    def _retry(self, stamp: float, tool: np.ndarray, why: str) -> None:
        """Open, rise clear of the scene, look again; give up (open, DONE) after ``max_regrasps``."""
        self._events.append((stamp, why))
        if why == "slipped":
            self._carry_scale = min(self._carry_scale, 1.0) * 0.5
            self._carry_scale = max(self._carry_scale, 0.1 * self._p.weak_grip_speed)
        if self._regrasps >= self._p.max_regrasps:
            self._recover_from = np.array([tool[0], tool[1], self._carry_z])
            self._go(Phase.DONE, stamp)
            return
        self._regrasps += 1
        self._recover_from = np.array([tool[0], tool[1], self._carry_z])
        self._go(Phase.RECOVER, stamp)

    def _judge_grip(self, observation: Observation, tool: np.ndarray, elapsed: float) -> bool:
        """Grasp checks of the current phase; True when the phase was changed by them."""
        if self._scene.gripper_joint is None:
            return False
        closure = self._closure(observation)
        stamp = observation.stamp
        if self._phase is Phase.CLOSE and elapsed >= _GRIPPER_DWELL_S / min(self._p.speed, 2.0):
            if not self._grip.grasped(closure):
                self._retry(stamp, tool, "empty")
                return True
            self._held = [(stamp, closure)]
            self._events.append((stamp, "grasped"))
            return False
        if self._phase in _CARRYING:
            self._held.append((stamp, closure))
            state = self._grip.judge(self._held)
            if state is GripState.SLIPPED:
                self._retry(stamp, tool, "slipped")
                return True
            if state is GripState.WEAK and self._carry_scale > self._p.weak_grip_speed:
                self._carry_scale = self._p.weak_grip_speed
                self._events.append((stamp, "weak"))
        return False

    def fresh_required(self) -> frozenset[ObservationKind]:
        """Images only while perceiving (first look, after a slip); the joints always."""
        if self._info is None or self._phase is Phase.PERCEIVE:
            return self.requires
        return frozenset({ObservationKind.JOINT_STATE})

    def act(self, observation: Observation) -> Action:
        """Next arm and gripper command (see the class docstring for the script)."""
        if self._info is None:
            raise PolicyError("reference policy: act() called before reset()")
        info, arm = self._info, self._scene.arm
        dt = self._clock.tick(observation.stamp)
        q_meas = observation.positions(info.arm_joint_names)
        tool, _ = arm.fk(q_meas)
        if self._phase is Phase.PERCEIVE:
            try:
                self._perceive(observation)
            except PolicyError:
                if not self._regrasps:
                    raise
                # The object is no longer in view after a slip (e.g. off the table): give up, open.
                self._events.append((observation.stamp, "lost"))
                self._go(Phase.DONE, observation.stamp)
                return Action(
                    arm_positions=self._mover.q_cmd.copy() if self._mover is not None else q_meas,
                    gripper=self._info.gripper_command_range[0],
                )
            assert self._estimate is not None
            if self._mover is None:
                self._mover = CartesianMover(arm, q_meas, self._p.speed, accel=_LINEAR_ACCEL)
            cube = self._estimate.position
            grasp_z = cube[2] + self._p.grasp_offset_m
            self._grasp_yaw = _grasp_yaw(
                arm,
                cube,
                (grasp_z, grasp_z + _APPROACH_HEIGHT),
                self._estimate.yaw,
                self._mover.yaw,
                self._mover.q_cmd,
            )
            self._plan_heights()
            self._go(Phase.APPROACH, observation.stamp)
        mover = self._mover
        assert mover is not None
        elapsed = observation.stamp - self._phase_start
        if self._judge_grip(observation, tool, elapsed):
            elapsed = 0.0
        goal, self._gripper = self._goal(self._phase)

        scale = self._speed_scale()
        at_goal = mover.advance(goal, self._grasp_yaw, dt, scale=scale)
        if at_goal:
            # Integrate the steady tool error (joint sag) into the IK goal, bounded.
            self._sag = np.clip(self._sag + _SAG_GAIN * (mover.pos - tool), -_SAG_LIMIT_M, _SAG_LIMIT_M)
        mover.command(dt, scale=scale, offset=self._sag)

        # Phase completion: set-point at the goal and the measured tool there too (or dwell / timeout).
        reached = float(np.linalg.norm(tool - goal)) <= _REACHED_M
        if self._phase in (Phase.CLOSE, Phase.OPEN):
            done = elapsed >= _GRIPPER_DWELL_S / min(self._p.speed, 2.0)
        elif self._phase is Phase.DONE:
            done = False
        elif self._phase is Phase.TEST_LIFT:
            done = at_goal and (reached or elapsed >= _PHASE_TIMEOUT_S) and elapsed >= _TEST_HOLD_S
        elif self._phase is Phase.RECOVER:
            done = at_goal and elapsed >= _LOOK_DWELL_S
        else:
            done = at_goal and (reached or elapsed >= _PHASE_TIMEOUT_S)
        if done:
            self._go(_NEXT[self._phase], observation.stamp)
        return Action(arm_positions=mover.q_cmd.copy(), gripper=self._gripper)
