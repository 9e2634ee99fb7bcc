"""Depth-only top-down pick-and-place on a timed plan of straight Cartesian segments."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from r2s2r_sim.world.kinematics import KinematicArm, tool_down_rotation

from r2s2r_eval.policies.scripted.motion import StepClock, tool_yaw
from r2s2r_eval.policies.scripted.scene import arm_scene
from r2s2r_eval.policies.topdown.config import TopdownParams
from r2s2r_eval.policies.topdown.perception import Blob, highest_blob
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, Policy, PolicyError

__all__ = ["Segment", "TopdownPolicy"]

_APPROACH_HEIGHT = 0.12  # above the grasp point before descending (m)
_CARRY_Z_ABOVE_TARGET = 0.18
_RELEASE_HEIGHT = 0.05
_RETREAT_HEIGHT = 0.2
_GRIPPER_S = 0.7


@dataclass(frozen=True)
class Segment:
    """One piece of the plan: a straight line from ``start`` to ``end`` (m) with a fixed gripper command.

    The tool moves along it during ``move_s`` and holds ``end`` for the rest of ``duration``; a segment
    with ``start == end`` is a dwell (the gripper opens or closes).
    """

    start: np.ndarray
    end: np.ndarray
    gripper: float
    duration: float
    move_s: float


@dataclass(frozen=True)
class _Scene:
    arm: KinematicArm
    base_pose: np.ndarray
    target: np.ndarray


@lru_cache(maxsize=4)
def _scene(world_dir: Path) -> _Scene:
    scene = arm_scene(world_dir, "topdown")
    return _Scene(arm=scene.arm, base_pose=scene.base_pose, target=scene.site(scene.task.target_site))


class TopdownPolicy(Policy):
    """Depth-only pick-and-place: grasp the highest thing on the table, carry it to the bin, release.

    A different design from ``reference``: no colour and no object model.  From the first depth frame it
    takes the table plane (median workspace height) and the blob whose top is highest above it
    (:func:`~r2s2r_eval.policies.topdown.perception.highest_blob`), then plays a plan fixed at that moment:
    straight Cartesian segments at constant ``speed`` (above the blob, down, close, up, over the bin, down,
    open, up), timed open loop on the scripted policies' step clock (no check that the tool arrived; a stall
    longer than its cap is dropped from the plan's time, not jumped), with the fingers aligned to the blob's
    top-face rectangle and closing ``grasp_depth_m`` below its top.  A taller distractor is grasped
    instead of the cube.  Uses the arm's kinematics and the bin's target site from the world's MJCF.
    """

    params_type = TopdownParams
    tasks = frozenset({"pick_place"})
    requires = frozenset(
        {
            ObservationKind.JOINT_STATE,
            ObservationKind.DEPTH,
            ObservationKind.CAMERA_INFO,
            ObservationKind.CAMERA_POSE,
        }
    )

    def __init__(self, params: TopdownParams | None = None) -> None:
        """Build the policy; the world's kinematics load at the first :meth:`reset`."""
        super().__init__(params)
        self._p: TopdownParams = self.params  # type: ignore[assignment]
        self._info: EpisodeInfo | None = None
        self._plan: list[Segment] = []
        self._done = False

    def control_rate_hz(self) -> float:
        """Rate (Hz) the policy asks to be called at."""
        return self._p.control_rate_hz

    @property
    def done(self) -> bool:
        """True once the plan has been played to its end."""
        return self._done

    @property
    def blob(self) -> Blob | None:
        """The blob chosen in this episode (model world frame), once perceived."""
        return self._blob

    @property
    def plan(self) -> list[Segment]:
        """This episode's segments (empty before the first observation)."""
        return list(self._plan)

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode."""
        self._info = info
        self._scene = _scene(Path(info.world_dir))
        self._plan = []
        self._blob: Blob | None = None
        self._clock = StepClock(info.control_period)
        self._q_cmd: np.ndarray | None = None
        self._yaw0 = self._yaw1 = 0.0
        self._done = False

    def _make_plan(self, obs: Observation, q: np.ndarray) -> None:
        if obs.depth is None or obs.camera_k is None or obs.camera_pose is None:
            raise PolicyError("topdown policy: the first observation lacks depth, camera_k or camera_pose")
        to_model = np.eye(4)
        if obs.base_pose is not None:
            to_model = self._scene.base_pose @ np.linalg.inv(obs.base_pose)
        blob = highest_blob(
            obs.depth, obs.camera_k, to_model @ obs.camera_pose, min_height=self._p.min_blob_height_m
        )
        if blob is None:
            raise PolicyError("topdown policy: nothing found above the table in the depth image")
        self._blob = blob
        assert self._info is not None
        open_cmd, closed_cmd = self._info.gripper_command_range
        arm, target = self._scene.arm, self._scene.target
        tool, rot = arm.fk(q)
        grasp = np.array([*blob.centre, max(blob.top_z - self._p.grasp_depth_m, blob.table_z + 0.005)])
        carry_z = target[2] + _CARRY_Z_ABOVE_TARGET
        points = [
            (tool, open_cmd),
            (grasp + [0.0, 0.0, _APPROACH_HEIGHT], open_cmd),
            (grasp, open_cmd),
            (grasp, closed_cmd),
            (np.array([grasp[0], grasp[1], carry_z]), closed_cmd),
            (np.array([target[0], target[1], carry_z]), closed_cmd),
            (target + [0.0, 0.0, _RELEASE_HEIGHT], closed_cmd),
            (target + [0.0, 0.0, _RELEASE_HEIGHT], open_cmd),
            (target + [0.0, 0.0, _RETREAT_HEIGHT], open_cmd),
        ]
        plan = []
        for (a, _), (b, grip) in zip(points[:-1], points[1:], strict=True):
            dist = float(np.linalg.norm(b - a))
            move = dist / self._p.speed
            duration = _GRIPPER_S if dist == 0.0 else move + self._p.settle_s
            plan.append(Segment(np.asarray(a, float), np.asarray(b, float), float(grip), duration, move))
        self._plan = plan
        self._yaw0 = tool_yaw(rot)
        k = round((self._yaw0 - blob.yaw) / (math.pi / 2))
        self._yaw1 = blob.yaw + k * math.pi / 2

    def _setpoint(self, t: float) -> tuple[np.ndarray, float, float]:
        """Tool position, tool yaw and gripper command at ``t`` s into the plan."""
        for i, seg in enumerate(self._plan):
            if t < seg.duration or i == len(self._plan) - 1:
                s = min(max(t / seg.move_s, 0.0), 1.0) if seg.move_s > 0 else 1.0
                pos = seg.start + s * (seg.end - seg.start)
                yaw = self._yaw0 + s * (self._yaw1 - self._yaw0) if i == 0 else self._yaw1
                if i == len(self._plan) - 1 and t >= seg.duration:
                    self._done = True
                return pos, yaw, seg.gripper
            t -= seg.duration
        raise AssertionError("unreachable: the plan is not empty")

    def act(self, observation: Observation) -> Action:
        """Next arm and gripper command."""
        if self._info is None:
            raise PolicyError("topdown policy: act() called before reset()")
        self._clock.tick(observation.stamp)
        q = observation.positions(self._info.arm_joint_names)
        if not self._plan:
            self._make_plan(observation, q)
            self._q_cmd = q.copy()
        assert self._q_cmd is not None
        pos, yaw, grip = self._setpoint(self._clock.elapsed)
        q_des, _ = self._scene.arm.ik(pos, tool_down_rotation(yaw), self._q_cmd)
        self._q_cmd = q_des
        return Action(arm_positions=q_des.copy(), gripper=grip)
