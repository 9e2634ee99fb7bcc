"""The policy plug-in API: observations, actions, the ``Policy`` base class and its registry; no rclpy."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from r2s2r_sim.ranges import check_fields
from r2s2r_sim.tasks.config import TaskType
from r2s2r_sim.yaml_files import parse_yaml

__all__ = [
    "ENTRY_POINT_GROUP",
    "Action",
    "EpisodeInfo",
    "ImageRequest",
    "Observation",
    "ObservationKind",
    "Policy",
    "PolicyError",
    "PolicyParams",
    "available_policies",
    "check_policy_task",
    "load_policy",
    "params_from_dict",
    "policies_for_task",
    "resolve_policy",
]

ENTRY_POINT_GROUP = "r2s2r.policies"
# Seed-sequence key of the policy's own random stream, kept apart from the world's variation stream.
_POLICY_STREAM = 0x504F4C


class PolicyError(ValueError):
    """A policy name, its parameters, an observation or an action is invalid.

    The message names the policy, field or value at fault and what was expected.
    """


class ObservationKind(enum.Enum):
    """Parts of an :class:`Observation` a policy can require; the policy node watches their age."""

    JOINT_STATE = "joint_state"
    RGB = "rgb"
    DEPTH = "depth"
    CAMERA_INFO = "camera_info"
    CAMERA_POSE = "camera_pose"
    BASE_POSE = "base_pose"


FloatArray = npt.NDArray[np.float64]


def _check_matrix(value: np.ndarray | None, name: str, shape: tuple[int, ...]) -> None:
    if value is None:
        return
    if not isinstance(value, np.ndarray) or value.shape != shape:
        got = getattr(value, "shape", type(value).__name__)
        raise PolicyError(f"Observation.{name}: must be a {shape} array, got {got}")
    if not np.all(np.isfinite(value)):
        raise PolicyError(f"Observation.{name}: must be finite")


@dataclass(frozen=True, kw_only=True, eq=False)
class Observation:
    """What the robot's sensors report at one instant: only what real hardware provides.

    Attributes:
        stamp: time of the observation since the episode's first one (s; sim time in sim, the driver's
            clock on hardware); see :func:`r2s2r_eval.episodes.sensor_arrays.episode_stamp`.
        joint_names: names as on ``/joint_states``.
        joint_positions: positions (rad or m), float64, one per name.
        joint_velocities: velocities (rad/s or m/s), float64, one per name.
        rgb: colour image, HxWx3 uint8 RGB, or ``None``.
        depth: depth aligned to ``rgb``, HxW float32 metres; invalid pixels are NaN.
        camera_k: 3x3 intrinsics of ``rgb`` (px).
        camera_d: lens distortion of ``rgb`` as ``CameraInfo.d`` (plumb_bob ``k1, k2, p1, p2, k3``); a
            policy that projects with ``camera_k`` alone treats the image as an ideal pinhole.
        camera_pose: 4x4 pose of the camera optical frame in the world frame (``T_world_camera``: maps
            optical-frame points to world points), from ``/tf``.
        base_pose: 4x4 pose of the robot base in the world frame, from ``/tf``.
    """

    stamp: float
    joint_names: tuple[str, ...]
    joint_positions: FloatArray
    joint_velocities: FloatArray
    rgb: npt.NDArray[np.uint8] | None = None
    depth: npt.NDArray[np.float32] | None = None
    camera_k: FloatArray | None = None
    camera_d: FloatArray | None = None
    camera_pose: FloatArray | None = None
    base_pose: FloatArray | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.stamp):
            raise PolicyError(f"Observation.stamp: must be finite, got {self.stamp}")
        n = len(self.joint_names)
        for name in ("joint_positions", "joint_velocities"):
            value = getattr(self, name)
            if not isinstance(value, np.ndarray) or value.shape != (n,):
                got = getattr(value, "shape", type(value).__name__)
                raise PolicyError(f"Observation.{name}: must have shape ({n},) like joint_names, got {got}")
        if self.rgb is not None and (
            self.rgb.ndim != 3 or self.rgb.shape[2] != 3 or self.rgb.dtype != np.uint8
        ):
            raise PolicyError(f"Observation.rgb: must be HxWx3 uint8, got {self.rgb.shape} {self.rgb.dtype}")
        if self.depth is not None:
            if self.depth.ndim != 2 or self.depth.dtype != np.float32:
                raise PolicyError(
                    f"Observation.depth: must be HxW float32, got {self.depth.shape} {self.depth.dtype}"
                )
            if self.rgb is not None and self.depth.shape != self.rgb.shape[:2]:
                raise PolicyError(
                    f"Observation.depth: shape {self.depth.shape} differs from rgb {self.rgb.shape[:2]} "
                    "(depth must be aligned to colour)"
                )
        _check_matrix(self.camera_k, "camera_k", (3, 3))
        if self.camera_d is not None and (
            not isinstance(self.camera_d, np.ndarray)
            or self.camera_d.ndim != 1
            or not np.all(np.isfinite(self.camera_d))
        ):
            raise PolicyError(f"Observation.camera_d: must be a finite 1-D array, got {self.camera_d!r}")
        _check_matrix(self.camera_pose, "camera_pose", (4, 4))
        _check_matrix(self.base_pose, "base_pose", (4, 4))

    def positions(self, names: tuple[str, ...] | list[str]) -> FloatArray:
        """Positions of ``names`` in that order.

        Raises:
            PolicyError: a name is not in ``joint_names``.
        """
        index = {n: i for i, n in enumerate(self.joint_names)}
        missing = [n for n in names if n not in index]
        if missing:
            raise PolicyError(f"Observation: joints {missing} not in joint_names {list(self.joint_names)}")
        return np.array([self.joint_positions[index[n]] for n in names], dtype=np.float64)


@dataclass(frozen=True, kw_only=True, eq=False)
class Action:
    """One command: arm position targets in command order and one gripper command.

    Attributes:
        arm_positions: target positions (rad or m), in ``EpisodeInfo.arm_joint_names`` order.
        gripper: gripper command in its command units (see ``EpisodeInfo.gripper_command_range``).
    """

    arm_positions: FloatArray
    gripper: float

    def __post_init__(self) -> None:
        arm = np.asarray(self.arm_positions, dtype=np.float64)
        if arm.ndim != 1:
            raise PolicyError(f"Action.arm_positions: must be 1-D, got shape {arm.shape}")
        if not np.all(np.isfinite(arm)):
            raise PolicyError(f"Action.arm_positions: must be finite, got {arm.tolist()}")
        if not math.isfinite(self.gripper):
            raise PolicyError(f"Action.gripper: must be finite, got {self.gripper}")
        object.__setattr__(self, "arm_positions", arm)
        object.__setattr__(self, "gripper", float(self.gripper))

    def check(self, info: EpisodeInfo) -> None:
        """Check the action against the episode's interface.

        Raises:
            PolicyError: wrong number of arm positions, or a gripper command outside its range.
        """
        n = len(info.arm_joint_names)
        if self.arm_positions.shape != (n,):
            raise PolicyError(
                f"Action.arm_positions: has {self.arm_positions.shape[0]} values, the arm has {n} joints "
                f"{list(info.arm_joint_names)}"
            )
        lo, hi = sorted(info.gripper_command_range)
        if not lo - 1e-9 <= self.gripper <= hi + 1e-9:
            raise PolicyError(f"Action.gripper: {self.gripper} outside the command range [{lo}, {hi}]")


@dataclass(frozen=True, kw_only=True)
class EpisodeInfo:
    """What a policy is told when an episode starts.

    Attributes:
        episode_index: counts episodes since the evaluation started, from 0.
        seed: the variation seed the world was reset with; also seeds the policy's own stream.
        world_id: world id, e.g. ``tabletop-pick-v1``.
        world_dir: the folder of that world (``world.yaml`` and its MJCF): what a policy may read to model
            the scene, e.g. the arm's kinematics.  The cell an episode runs in may differ from it (a
            variation, or the hardware the world was built from).
        arm_joint_names: arm joints in command order (names as on ``/joint_states``).
        gripper_command_range: ``(open, closed)`` gripper commands.
        control_period: time between two ``act`` calls (s).
    """

    episode_index: int
    seed: int
    world_id: str
    world_dir: Path
    arm_joint_names: tuple[str, ...]
    gripper_command_range: tuple[float, float]
    control_period: float

    def __post_init__(self) -> None:
        if self.episode_index < 0:
            raise PolicyError(f"EpisodeInfo.episode_index: must be >= 0, got {self.episode_index}")
        if self.seed < 0:
            raise PolicyError(f"EpisodeInfo.seed: must be >= 0, got {self.seed}")
        if not self.arm_joint_names:
            raise PolicyError("EpisodeInfo.arm_joint_names: must not be empty")
        if not (math.isfinite(self.control_period) and self.control_period > 0):
            raise PolicyError(f"EpisodeInfo.control_period: must be > 0 s, got {self.control_period}")

    def rng(self) -> np.random.Generator:
        """A fresh generator for the policy, determined by ``seed`` and independent of the world's stream."""
        return np.random.default_rng(np.random.SeedSequence([self.seed, _POLICY_STREAM]))


@dataclass(frozen=True, kw_only=True)
class ImageRequest:
    """The camera images a policy consumes: what an in-process runner renders for it.

    On hardware the driver's frames arrive at the driver's size and rate and the policy scales them
    itself; a simulator can instead draw only what the policy reads.

    Attributes:
        width, height: image size (px) the policy reads.
        rate_hz: frames per second (Hz) the policy reads; None: the camera's rate.
        supersample: draw at this multiple of ``width`` x ``height`` and area-downscale (1-8): the
            anti-aliasing a larger camera frame gets from the policy's own downscale.
    """

    width: int
    height: int
    rate_hz: float | None = None
    supersample: int = 1

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            if getattr(self, name) < 1:
                raise PolicyError(f"ImageRequest.{name}: must be >= 1 px, got {getattr(self, name)}")
        if self.rate_hz is not None and not (math.isfinite(self.rate_hz) and self.rate_hz > 0):
            raise PolicyError(f"ImageRequest.rate_hz: must be > 0 Hz, got {self.rate_hz}")
        if not 1 <= self.supersample <= 8:
            raise PolicyError(f"ImageRequest.supersample: must be in [1, 8], got {self.supersample}")


@dataclass(frozen=True, kw_only=True)
class PolicyParams:
    """Base of the typed parameter dataclasses of policies (frozen, keyword-only).

    A field declared with :func:`~r2s2r_sim.ranges.within` is checked against its range when the
    parameters are built (``ValueError`` naming the field); a subclass with cross-field rules extends
    ``__post_init__`` and calls ``super().__post_init__()``.
    """

    def __post_init__(self) -> None:
        check_fields(self)


class Policy:
    """Base class of policy plug-ins.

    A subclass sets ``params_type`` to a frozen dataclass derived from :class:`PolicyParams`, lists the
    observation parts it needs in ``requires``, and overrides :meth:`reset` and :meth:`act`. ``tasks`` names
    the task types it solves (``world.yaml``'s ``task.type``, e.g. ``{"push"}``) so that a policy run on
    another task's world is refused before its first episode; None (the default, e.g. a learned policy)
    runs on any task. The contract is checked when the subclass is defined; a shared base of several
    policies declares itself with ``class Base(Policy, base=True)`` and is checked in its subclasses.
    """

    params_type: ClassVar[type[PolicyParams]] = PolicyParams
    requires: ClassVar[frozenset[ObservationKind]] = frozenset({ObservationKind.JOINT_STATE})
    tasks: ClassVar[frozenset[str] | None] = None

    def __init_subclass__(cls, *, base: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if base:
            return
        where = f"{cls.__module__}.{cls.__qualname__}"
        params = cls.__dict__.get("params_type", cls.params_type)
        if not (
            isinstance(params, type) and issubclass(params, PolicyParams) and dataclasses.is_dataclass(params)
        ):
            raise TypeError(
                f"{where}.params_type must be a dataclass derived from PolicyParams, got {params!r}"
            )
        if not params.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise TypeError(f"{where}.params_type {params.__name__} must be a frozen dataclass")
        for field in dataclasses.fields(params):
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise TypeError(f"{where}.params_type {params.__name__}.{field.name} needs a default value")
        requires = cls.requires
        if not isinstance(requires, frozenset) or not all(isinstance(r, ObservationKind) for r in requires):
            raise TypeError(f"{where}.requires must be a frozenset of ObservationKind, got {requires!r}")
        known = sorted(t.value for t in TaskType)
        if cls.tasks is not None and not (
            isinstance(cls.tasks, frozenset) and cls.tasks and all(t in known for t in cls.tasks)
        ):
            raise TypeError(
                f"{where}.tasks must be None (any task) or a non-empty frozenset of {known}, "
                f"got {cls.tasks!r}"
            )
        for method in ("reset", "act"):
            if getattr(cls, method) is getattr(Policy, method):
                raise TypeError(f"{where} must override Policy.{method}()")
        if list(inspect.signature(cls.act).parameters) != ["self", "observation"]:
            raise TypeError(f"{where}.act must have the signature act(self, observation)")
        if list(inspect.signature(cls.reset).parameters) != ["self", "info"]:
            raise TypeError(f"{where}.reset must have the signature reset(self, info)")

    def __init__(self, params: PolicyParams | None = None) -> None:
        """Build the policy with ``params`` (an instance of ``params_type``; ``None`` uses its defaults).

        Raises:
            PolicyError: ``params`` is of the wrong type.
        """
        params = self.params_type() if params is None else params
        if type(params) is not self.params_type:
            raise PolicyError(
                f"{type(self).__name__}: params must be {self.params_type.__name__}, "
                f"got {type(params).__name__}"
            )
        self.params = params

    def control_rate_hz(self) -> float | None:
        """Rate (Hz) the policy asks to be called at, or None to leave it to the caller."""
        return None

    def image_request(self) -> ImageRequest | None:
        """The image size and rate the policy reads, or None for the camera's own (the default)."""
        return None

    def fresh_required(self) -> frozenset[ObservationKind]:
        """The parts of ``requires`` the next :meth:`act` reads and needs fresh (default: all of them).

        A policy that looks at the images only at some steps (to perceive, say) returns just the joint
        state at the others, so a camera that lags or drops frames holds it only when it looks.  The parts
        of ``requires`` must still have arrived once: they fill the observation.
        """
        return self.requires

    @property
    def done(self) -> bool:
        """True once the policy considers its episode finished (it then holds its last command).

        On hardware nothing else ends an episode early: the policy node announces it, then the
        evaluator asks the judge. The default, False, leaves the end to a success held for the task's
        settle period (in sim and on the emulated hardware) or the timeout.
        """
        return False

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode; called before the first :meth:`act` of each episode."""
        raise NotImplementedError

    def act(self, observation: Observation) -> Action:
        """Return the command for ``observation``; raise to end the episode as a failure."""
        raise NotImplementedError


# ------------------------------------------------------------------------------------------- parameters

_SCALARS: dict[Any, tuple[type, ...]] = {float: (int, float), int: (int,), bool: (bool,), str: (str,)}


def _field_type(params_type: type, field: dataclasses.Field[Any]) -> Any:
    hints = typing.get_type_hints(params_type)
    return hints[field.name]


def _coerce(policy: str, name: str, kind: Any, value: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(kind)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(policy, name, option, value)
            except PolicyError:
                continue
        raise PolicyError(f"policy {policy!r}: parameter {name!r} must be {kind}, got {value!r}")
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        allowed = [e.value for e in kind]
        if value not in allowed:
            raise PolicyError(
                f"policy {policy!r}: parameter {name!r} must be one of {allowed}, got {value!r}"
            )
        return kind(value)
    if origin is tuple:
        args = typing.get_args(kind)
        if not isinstance(value, list | tuple):
            raise PolicyError(f"policy {policy!r}: parameter {name!r} must be a list, got {value!r}")
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else None
        if item is None and len(args) != len(value):
            raise PolicyError(
                f"policy {policy!r}: parameter {name!r} must have {len(args)} items, got {value!r}"
            )
        return tuple(
            _coerce(policy, f"{name}[{i}]", item if item is not None else args[i], v)
            for i, v in enumerate(value)
        )
    accepted = _SCALARS.get(kind)
    if accepted is None:
        raise PolicyError(f"policy {policy!r}: parameter {name!r} has unsupported type {kind}")
    if isinstance(value, bool) and kind is not bool:
        raise PolicyError(f"policy {policy!r}: parameter {name!r} must be {kind.__name__}, got {value!r}")
    if not isinstance(value, accepted):
        raise PolicyError(
            f"policy {policy!r}: parameter {name!r} must be {kind.__name__}, "
            f"got {type(value).__name__} {value!r}"
        )
    return kind(value)


def params_from_dict(
    params_type: type[PolicyParams], values: Mapping[str, Any], *, policy: str = ""
) -> PolicyParams:
    """Build ``params_type`` from a plain mapping (e.g. parsed YAML), checking names and types.

    Ints are accepted for float fields; enums are given by value; tuples as lists.

    Raises:
        PolicyError: an unknown name (listing the valid ones), a value of the wrong type, or a value the
            dataclass's own validation refuses.
    """
    label = policy or params_type.__name__
    fields = {f.name: f for f in dataclasses.fields(params_type)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise PolicyError(f"policy {label!r}: unknown parameter(s) {unknown} (valid: {sorted(fields)})")
    kwargs = {
        name: _coerce(label, name, _field_type(params_type, fields[name]), value)
        for name, value in values.items()
    }
    try:
        return params_type(**kwargs)
    except (ValueError, TypeError) as err:
        raise PolicyError(f"policy {label!r}: {err}") from err


# --------------------------------------------------------------------------------------------- registry


def available_policies() -> dict[str, str]:
    """Registered policy names and their ``module:Class`` targets (entry-point group ``r2s2r.policies``)."""
    return {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _import_target(name: str, target: str) -> type[Policy]:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise PolicyError(f"policy {name!r}: target {target!r} is not 'package.module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise PolicyError(f"policy {name!r}: cannot import {module_name!r}: {err}") from err
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PolicyError(f"policy {name!r}: module {module_name!r} has no {attr!r}") from None
    if not (isinstance(obj, type) and issubclass(obj, Policy)) or obj is Policy:
        raise PolicyError(f"policy {name!r}: {target!r} is not a subclass of r2s2r_eval.policy.Policy")
    return obj


def resolve_policy(name: str) -> type[Policy]:
    """Return the policy class registered as ``name``, or named by a ``package.module:Class`` string.

    Raises:
        PolicyError: an unknown name (listing the registered ones) or a target that does not import to a
            ``Policy`` subclass.
    """
    if ":" in name:
        return _import_target(name, name)
    registered = available_policies()
    if name not in registered:
        raise PolicyError(
            f"unknown policy {name!r}: registered policies are {sorted(registered)} "
            "(or give 'package.module:Class')"
        )
    return _import_target(name, registered[name])


def load_policy(name: str, params: Mapping[str, Any] | None = None) -> Policy:
    """Build the policy ``name`` with ``params`` (a mapping of its parameter dataclass's fields).

    Raises:
        PolicyError: unknown policy or invalid parameters (a ``ValueError``).
    """
    cls = resolve_policy(name)
    return cls(params_from_dict(cls.params_type, params or {}, policy=name))


def policy_params_from_yaml(text: str, error: Callable[[str], Exception]) -> dict[str, Any]:
    """The nodes' ``policy_params`` parameter (YAML text) as a mapping; empty text means no parameters.

    Raises:
        ``error``: the text is not valid YAML or not a mapping (the message names the parameter).
    """
    params = parse_yaml(text, "parameter policy_params", error) or {}
    if not isinstance(params, dict):
        raise error(f"parameter policy_params: must be a YAML mapping, got {text!r}")
    return params


# ------------------------------------------------------------------------------------------------ tasks


def policies_for_task(task: TaskType) -> list[str]:
    """The registered policies that declare ``task`` among their ``tasks``, sorted.

    Policies for any task (``tasks`` None) and plug-ins that fail to import are left out: the list is
    what an error message suggests instead of a policy that cannot solve the task.
    """
    found = []
    for name, target in sorted(available_policies().items()):
        try:
            tasks = _import_target(name, target).tasks
        except PolicyError:
            continue
        if tasks is not None and task.value in tasks:
            found.append(name)
    return found


def check_policy_task(name: str, task: TaskType, world: str) -> None:
    """Refuse the policy ``name`` on a world whose task type ``task`` it does not declare it solves.

    Raises:
        PolicyError: the policy declares other tasks; the message names the world's task and the
            registered policies that solve it. Also an unknown policy, as :func:`resolve_policy`.
    """
    tasks = resolve_policy(name).tasks
    if tasks is None or task.value in tasks:
        return
    solvers = ", ".join(policies_for_task(task)) or "none registered"
    raise PolicyError(
        f"policy {name!r} solves {', '.join(sorted(tasks))}, but world {world!r} has task "
        f"{task.value!r} (policies that solve it: {solvers}; 'auto' picks its reference policy)"
    )
