"""Scripted pick-and-place from RGB-D perception and inverse kinematics on a kinematic copy of the arm."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import mujoco
import numpy as np

from r2s2r_eval.policies.reference.config import ReferenceParams
from r2s2r_eval.policies.reference.kinematics import KinematicArm, tool_down_rotation
from r2s2r_eval.policies.reference.perception import CubeEstimate, estimate_cube
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, Policy, PolicyError

__all__ = ["Phase", "ReferencePolicy", "SceneModel"]

# Cartesian, tool-yaw and joint speed limits at speed = 1.
_LINEAR_SPEED = 0.15  # m/s
_YAW_SPEED = 1.0  # rad/s
_JOINT_SPEED = 1.5  # rad/s
# Heights (m) of the tool centre point: above the cube before descending, when carrying, above the bin
# target when releasing (the cube then drops ~2.5 cm onto the bin floor) and after retreating.
_APPROACH_HEIGHT = 0.12
_CARRY_Z_ABOVE_TARGET = 0.18
_RELEASE_HEIGHT = 0.05
_RETREAT_HEIGHT = 0.2
# A motion phase ends when the measured tool position is this close to its goal, or after the timeout.
_REACHED_M = 0.01
_PHASE_TIMEOUT_S = 4.0
_GRIPPER_DWELL_S = 0.8


class Phase(enum.Enum):
    """Steps of the pick-and-place script, in order."""

    PERCEIVE = "perceive"
    APPROACH = "approach"
    DESCEND = "descend"
    CLOSE = "close"
    LIFT = "lift"
    TRANSFER = "transfer"
    LOWER = "lower"
    OPEN = "open"
    RETREAT = "retreat"
    DONE = "done"


_ORDER = list(Phase)


@dataclass(frozen=True)
class SceneModel:
    """Static knowledge of a world taken from its MJCF: the arm's kinematics, the cube and the target."""

    arm: KinematicArm
    base_pose: np.ndarray  # 4x4 base pose in the model's world frame
    cube_colour: tuple[float, float, float]
    cube_half_size: float
    target: np.ndarray  # target site position in the world (m)


@lru_cache(maxsize=4)
def _nominal_camera(world_id: str, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Intrinsics (for ``width`` x ``height``) and optical-frame pose of a world's first camera."""
    import transforms3d
    from r2s2r_sim.rendering import camera_intrinsics
    from r2s2r_sim.world import SimWorld
    from r2s2r_sim.worlds import world_path

    try:
        world = SimWorld(world_path(world_id))
    except (ValueError, OSError) as err:
        raise PolicyError(f"reference policy: assume_camera_of: {err}") from err
    if not world.config.cameras:
        raise PolicyError(f"reference policy: assume_camera_of: world {world_id!r} has no camera")
    cam = world.config.cameras[0]
    mjcf_camera = world.model.camera(world.camera_id(cam.name)).name
    k = camera_intrinsics(world.model, mjcf_camera, width, height)
    pos, quat = world.camera_pose(cam.name)
    pose = np.eye(4)
    pose[:3, :3] = transforms3d.quaternions.quat2mat(quat)
    pose[:3, 3] = pos
    return np.asarray(k, dtype=np.float64), pose


@lru_cache(maxsize=4)
def _scene_model(world_dir: Path) -> SceneModel:
    # Imported here: only this policy compiles a world, and only once per world folder.
    from r2s2r_sim.world import SimWorld

    # A separate compile of the world's MJCF; only its model is kept, with a private MjData.
    world = SimWorld(world_dir)
    cfg = world.config
    if cfg.task is None or cfg.robot.ee_site is None:
        raise PolicyError(f"reference policy: world {cfg.id!r} ({world_dir}) needs a task and robot.ee_site")
    model = world.model
    prefix = cfg.robot.prefix
    arm = KinematicArm(model, tuple(prefix + n for n in cfg.robot.arm_joints), prefix + cfg.robot.ee_site)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    # The robot's root body is the top ancestor of the tool below the world body.
    body = int(model.site_bodyid[arm.site])
    while int(model.body_parentid[body]) != 0:
        body = int(model.body_parentid[body])
    base_id = body
    base = np.eye(4)
    base[:3, :3] = data.xmat[base_id].reshape(3, 3)
    base[:3, 3] = data.xpos[base_id]
    obj = model.body(cfg.task.object_body).id
    geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == obj]
    if not geoms:
        raise PolicyError(f"reference policy: object body {cfg.task.object_body!r} has no geom")
    geom = geoms[0]
    rgba = model.geom_rgba[geom]
    if int(model.geom_matid[geom]) >= 0:
        rgba = model.mat_rgba[model.geom_matid[geom]]
    return SceneModel(
        arm=arm,
        base_pose=base,
        cube_colour=(float(rgba[0]), float(rgba[1]), float(rgba[2])),
        cube_half_size=float(model.geom_size[geom][2]),
        target=data.site_xpos[model.site(cfg.task.target_site).id].copy(),
    )


def _nearest_equivalent_yaw(yaw: float, reference: float) -> float:
    """The yaw ``yaw + k * pi/2`` closest to ``reference`` (a square grasp is symmetric by quarter turns)."""
    k = round((reference - yaw) / (math.pi / 2))
    return yaw + k * math.pi / 2


def _tool_yaw(rot: np.ndarray) -> float:
    """Yaw of the tool's finger (y) axis about world z."""
    return math.atan2(rot[1, 1], rot[0, 1])


class ReferencePolicy(Policy):
    """Scripted pick-and-place: see the cube once, then approach, descend, grasp, lift, carry, place, retreat.

    Uses only observations (joint positions, RGB-D, intrinsics, camera and base poses) plus static scene
    knowledge from the world's MJCF (arm kinematics, the cube's colour and size, the bin's target site).
    Inverse kinematics runs on a separately compiled copy of the world model with its own ``MjData``.
    """

    params_type = ReferenceParams
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

    def __init__(self, params: ReferenceParams | None = None) -> None:
        """Build the policy; the world model is loaded at the first :meth:`reset`."""
        super().__init__(params)
        self._p: ReferenceParams = self.params  # type: ignore[assignment]
        self._info: EpisodeInfo | None = None

    def control_rate_hz(self) -> float:
        """Rate (Hz) the policy asks to be called at."""
        return self._p.control_rate_hz

    @property
    def phase(self) -> Phase:
        """The current phase."""
        return self._phase

    @property
    def done(self) -> bool:
        """True once the cube has been released and the arm retreats (the last phase)."""
        return self._phase is Phase.DONE

    @property
    def estimate(self) -> CubeEstimate | None:
        """The (noisy) cube estimate of this episode, once perceived."""
        return self._estimate

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode: load the scene model, draw this episode's perception noise."""
        self._info = info
        self._scene = _scene_model(Path(info.world_dir))
        self._rng = info.rng()
        self._noise = self._rng.normal(0.0, self._p.perception_noise_m, size=2)
        self._phase = Phase.PERCEIVE
        self._phase_start = math.nan
        self._estimate: CubeEstimate | None = None
        self._q_cmd: np.ndarray | None = None
        self._sp_pos = np.zeros(3)
        self._sp_yaw = 0.0
        self._grasp_yaw = 0.0
        self._gripper = info.gripper_command_range[0]
        self._world_to_model = np.eye(4)

    # ------------------------------------------------------------------------------------------ script

    def _goal(self, phase: Phase) -> tuple[np.ndarray, float]:
        """Goal tool position (model world frame) and gripper command of a motion or gripper phase."""
        assert self._estimate is not None and self._info is not None
        cube = self._estimate.position
        target = self._target()
        open_cmd, closed_cmd = self._info.gripper_command_range
        grasp = cube + np.array([0.0, 0.0, self._p.grasp_offset_m])
        carry_z = target[2] + self.carry_height_m
        goals = {
            Phase.APPROACH: (grasp + [0.0, 0.0, _APPROACH_HEIGHT], open_cmd),
            Phase.DESCEND: (grasp, open_cmd),
            Phase.CLOSE: (grasp, closed_cmd),
            Phase.LIFT: (np.array([grasp[0], grasp[1], carry_z]), closed_cmd),
            Phase.TRANSFER: (np.array([target[0], target[1], carry_z]), closed_cmd),
            Phase.LOWER: (target + [0.0, 0.0, self.release_height_m], closed_cmd),
            Phase.OPEN: (target + [0.0, 0.0, self.release_height_m], open_cmd),
            Phase.RETREAT: (target + [0.0, 0.0, _RETREAT_HEIGHT], open_cmd),
            Phase.DONE: (target + [0.0, 0.0, _RETREAT_HEIGHT], open_cmd),
        }
        pos, grip = goals[phase]
        return np.asarray(pos, dtype=np.float64), float(grip)

    def _target(self) -> np.ndarray:
        """Where the cube's centre goes (model world frame, m): the task's target site."""
        return self._scene.target

    def _perceive(self, obs: Observation) -> None:
        if obs.rgb is None or obs.depth is None or obs.camera_k is None or obs.camera_pose is None:
            raise PolicyError(
                "reference policy: the first observation lacks rgb, depth, camera_k or camera_pose"
            )
        scene = self._scene
        camera_k, camera_pose = obs.camera_k, obs.camera_pose
        if self._p.assume_camera_of:
            height, width = obs.rgb.shape[:2]
            camera_k, camera_pose = _nominal_camera(self._p.assume_camera_of, width, height)
        found = estimate_cube(
            obs.rgb, obs.depth, camera_k, camera_pose, scene.cube_colour, scene.cube_half_size
        )
        if found is None:
            raise PolicyError("reference policy: cube not found in the colour image")
        noisy = found.position.copy()
        noisy[:2] += self._noise
        # Observed world frame -> model world frame, through the observed and the modelled base pose.
        if obs.base_pose is not None:
            self._world_to_model = scene.base_pose @ np.linalg.inv(obs.base_pose)
        noisy = self._world_to_model[:3, :3] @ noisy + self._world_to_model[:3, 3]
        self._estimate = CubeEstimate(position=noisy, yaw=found.yaw, pixels=found.pixels)

    def _advance(self, stamp: float) -> None:
        self._phase = _ORDER[_ORDER.index(self._phase) + 1]
        self._phase_start = stamp

    def act(self, observation: Observation) -> Action:
        """Next arm and gripper command (see the class docstring for the script)."""
        if self._info is None:
            raise PolicyError("reference policy: act() called before reset()")
        info, arm = self._info, self._scene.arm
        dt = info.control_period
        q_meas = observation.positions(info.arm_joint_names)
        if self._phase is Phase.PERCEIVE:
            self._perceive(observation)
            assert self._estimate is not None
            self._q_cmd = q_meas.copy()
            pos, rot = arm.fk(q_meas)
            self._sp_pos = pos
            self._sp_yaw = _tool_yaw(rot)
            self._grasp_yaw = _nearest_equivalent_yaw(self._estimate.yaw, self._sp_yaw)
            self._advance(observation.stamp)
        assert self._q_cmd is not None
        goal, self._gripper = self._goal(self._phase)
        scale = self._p.speed

        # Move the Cartesian set-point and the tool yaw toward the goal at bounded speed.
        delta = goal - self._sp_pos
        dist = float(np.linalg.norm(delta))
        max_step = _LINEAR_SPEED * scale * dt
        self._sp_pos = goal.copy() if dist <= max_step else self._sp_pos + delta * (max_step / dist)
        dyaw = self._grasp_yaw - self._sp_yaw
        max_yaw = _YAW_SPEED * scale * dt
        self._sp_yaw += float(np.clip(dyaw, -max_yaw, max_yaw))

        q_des, _ = arm.ik(self._sp_pos, tool_down_rotation(self._sp_yaw), self._q_cmd)
        max_dq = _JOINT_SPEED * scale * dt
        self._q_cmd = self._q_cmd + np.clip(q_des - self._q_cmd, -max_dq, max_dq)

        # Phase completion: set-point at the goal and the measured tool there too (or dwell / timeout).
        elapsed = observation.stamp - self._phase_start
        at_goal = dist <= max_step and abs(dyaw) <= max_yaw
        if self._phase in (Phase.CLOSE, Phase.OPEN):
            done = elapsed >= _GRIPPER_DWELL_S / min(scale, 2.0)
        elif self._phase is Phase.DONE:
            done = False
        else:
            tool, _ = arm.fk(q_meas)
            reached = float(np.linalg.norm(tool - goal)) <= _REACHED_M
            done = at_goal and (reached or elapsed >= _PHASE_TIMEOUT_S)
        if done:
            self._advance(observation.stamp)
        return Action(arm_positions=self._q_cmd.copy(), gripper=self._gripper)
