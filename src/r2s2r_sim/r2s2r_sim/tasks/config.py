"""Typed, validated configuration of a world's task (the ``task:`` section of ``world.yaml``).

Tasks read only this; the world's loader builds it, so the task layer needs nothing from the world layer.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from r2s2r_sim.config_reader import check, check_range
from r2s2r_sim.errors import WorldError

__all__ = [
    "AUTO_POLICY",
    "REFERENCE_POLICIES",
    "REGION_TASKS",
    "ObjectPoseRange",
    "TaskConfig",
    "TaskType",
    "reference_policy",
]


class TaskType(enum.Enum):
    """Task kinds a world may declare."""

    PICK_PLACE = "pick_place"
    PUSH = "push"
    STACK = "stack"
    DRAWER = "drawer"


# Task types whose success is a region around ``target_site`` (``success_radius``, ``success_height``).
REGION_TASKS = (TaskType.PICK_PLACE, TaskType.PUSH, TaskType.STACK)

# The policy name that stands for the scripted reference policy of the world's task.
AUTO_POLICY = "auto"
# The scripted reference policy of each task type (entry points in r2s2r.policies); kept here, beside the
# task types, so that the launch graph and the evaluation commands resolve ``auto`` from one table.
REFERENCE_POLICIES: dict[TaskType, str] = {
    TaskType.PICK_PLACE: "reference",
    TaskType.PUSH: "push_reference",
    TaskType.STACK: "stack_reference",
    TaskType.DRAWER: "drawer_reference",
}


def reference_policy(name: str, task: TaskType) -> str:
    """``name``, or for ``auto`` the scripted reference policy of ``task``."""
    return REFERENCE_POLICIES[task] if name == AUTO_POLICY else name


@dataclass(frozen=True, kw_only=True)
class ObjectPoseRange:
    """Uniform ranges of the object's initial pose, world frame (m, m, rad)."""

    x: tuple[float, float]
    y: tuple[float, float]
    yaw: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        for name in ("x", "y", "yaw"):
            value = getattr(self, name)
            check(all(math.isfinite(v) for v in value), name, f"must be finite, got {list(value)}")
            check(value[0] <= value[1], name, f"must be [low, high] with low <= high, got {list(value)}")


@dataclass(frozen=True, kw_only=True)
class TaskConfig:
    """Task parameters (each task class documents which it reads).

    Attributes:
        type: task kind.
        object_body: the body the task is about (scene MJCF): a free body to pick, push or stack, or the
            moving part of an articulated object (one slide or hinge joint).
        target_site: site marking the target (scene MJCF): the place or push target, the stacking spot
            on the support block, or the drawer's handle.
        success_radius: max horizontal object-target distance for success (m); required by the
            region tasks (pick_place, push, stack).
        success_height: max ``|object z - target z|`` for success (m); required like ``success_radius``.
        timeout: episode time limit (s).
        object_pose_range: randomisation of the object pose at reset; ``None`` keeps the MJCF pose.
        table_top_z: table height (m) for the drop check; ``None`` uses the object's MJCF resting height.
        settle_time: how long (s) the object must rest at the target, released, before the task succeeds.
        settle_speed: the object's linear speed (m/s) at or below which it counts as resting.
        settle_angular_speed: the object's angular speed (rad/s) at or below which it counts as resting.
        hold_s: how long the success condition must hold, object at rest, before it counts (s); >= 0.
        support_body: stack: the free block the object goes on.
        support_pose_range: stack: randomisation of the support block's pose at reset.
        open_threshold: drawer: joint position (m or rad) the articulated object must be held past.
        joint_start_range: drawer: uniform range of the joint position at reset (m or rad).
    """

    type: TaskType
    object_body: str
    target_site: str
    timeout: float
    success_radius: float | None = None
    success_height: float | None = None
    object_pose_range: ObjectPoseRange | None = None
    table_top_z: float | None = None
    settle_time: float = 0.5
    settle_speed: float = 0.02
    settle_angular_speed: float = 0.5
    hold_s: float = 0.0
    support_body: str | None = None
    support_pose_range: ObjectPoseRange | None = None
    open_threshold: float | None = None
    joint_start_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        for name in ("success_radius", "success_height", "timeout", "settle_speed", "settle_angular_speed"):
            value = getattr(self, name)
            if value is None and (name == "timeout" or self.type in REGION_TASKS):
                raise WorldError(f"{name}: required for task type {self.type.value!r}")
            if value is not None:
                check(math.isfinite(value) and value > 0, name, f"must be > 0, got {value}")
        check(math.isfinite(self.hold_s) and self.hold_s >= 0, "hold_s", f"must be >= 0, got {self.hold_s}")
        if self.type is TaskType.STACK:
            check(self.support_body is not None, "support_body", "required for task type 'stack'")
        if self.type is TaskType.DRAWER:
            check(
                self.open_threshold is not None and math.isfinite(self.open_threshold),
                "open_threshold",
                f"required (finite) for task type 'drawer', got {self.open_threshold}",
            )
        if self.joint_start_range is not None:
            check_range(self.joint_start_range, "joint_start_range")
        check(
            math.isfinite(self.settle_time) and 0.0 <= self.settle_time < self.timeout,
            "settle_time",
            f"must be in [0, timeout) s, got {self.settle_time} (timeout {self.timeout})",
        )
