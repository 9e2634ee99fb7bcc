"""Per-task settings of the studies: the bundled world, its policy family and its variation defaults.

Each task names what a closed-loop or transfer study needs to run it: the bundled world (and so the task),
a family of at least six policies of clearly different quality (the reference policy with degraded
parameters, and other designs where there are some), a smaller family for CI, the variation defaults and
the emulated hardware profile written for that world, where one exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import default_variations_file, world_path

from r2s2r_eval.episodes.sweep_plan import PolicySpec

__all__ = ["TASK_STUDIES", "TaskStudy", "task_study"]

# Targets as ``module:Class``: they resolve whether or not the package's entry points are installed.
_PUSH = "r2s2r_eval.policies.push.policy:PushPolicy"
_STACK = "r2s2r_eval.policies.stack.policy:StackPolicy"
_DRAWER = "r2s2r_eval.policies.drawer.policy:DrawerPolicy"


@dataclass(frozen=True, kw_only=True)
class TaskStudy:
    """What a study of one task runs.

    Attributes:
        task: task name (``--task``).
        world: bundled world id (the baseline sim world).
        family: the evaluated policies, strongest first by design.
        small_family: a subset for CI-sized runs.
        profile: emulated hardware profile written for ``world``; None where none exists yet.
        max_steps: control steps (10 Hz) before a study gives a trial up, on every side: short enough
            to cut failures short, long enough for the slowest policy's success on the (emulated)
            hardware, where latency and friction make a push or a drawer slower than in sim.
        transfer: the transfer study's defaults for this task where they differ from pick's
            (:class:`~r2s2r_eval.studies.transfer.TransferConfig` fields): its demonstrating expert, and the
            learning recipe measured to work on it.
    """

    task: str
    world: str
    family: tuple[PolicySpec, ...]
    small_family: tuple[PolicySpec, ...]
    profile: Path | None
    max_steps: int = 300  # the bundled worlds' 30 s timeout
    transfer: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.family) < 6:
            raise ValueError(f"task {self.task!r}: family needs at least 6 policies, got {len(self.family)}")
        if not all(spec in self.family for spec in self.small_family):
            raise ValueError(f"task {self.task!r}: small_family must be taken from family")

    @property
    def variations(self) -> Path:
        """The world's own variation defaults, else the package's."""
        return default_variations_file(world_path(self.world))

    def on_world(self, world: str | Path) -> TaskStudy:
        """This study in ``world`` (a bundled id or a folder, e.g. one ``r2s2r world new`` wrote).

        The world is the baseline sim world and the evaluated one; its own ``variations.yaml`` gives the
        axes.  The family member that assumes the bundled world's nominal camera assumes ``world``'s
        instead.  No emulated hardware profile is known for it: the caller must give one.

        Raises:
            ValueError: ``world`` does not load, or holds another task; the message names it.
        """
        folder = world_path(world)
        if str(world) == self.world or folder == world_path(self.world):
            return self
        task, wanted = load_world_config(folder).task, load_world_config(world_path(self.world)).task
        if task is None or wanted is None or task.type is not wanted.type:
            kind = None if task is None else task.type.value
            raise ValueError(f"{world}: its task is {kind}, not {self.task}")
        own = str(folder)

        def mounted(family: tuple[PolicySpec, ...]) -> tuple[PolicySpec, ...]:
            return tuple(
                replace(p, params={**p.params, "assume_camera_of": own})
                if p.params.get("assume_camera_of") == self.world
                else p
                for p in family
            )

        family, small = mounted(self.family), mounted(self.small_family)
        return replace(self, world=own, family=family, small_family=small, profile=None)


def _family(name: str, *params: dict[str, object]) -> tuple[PolicySpec, ...]:
    return tuple(PolicySpec(name=name, params=p) for p in params)


_PICK_FAMILY = (
    PolicySpec(name="reference"),
    PolicySpec(name="reference", params={"perception_noise_m": 0.01}),
    PolicySpec(name="reference", params={"perception_noise_m": 0.02}),
    PolicySpec(name="topdown"),
    PolicySpec(name="reference", params={"perception_noise_m": 0.04}),
    PolicySpec(name="reference", params={"perception_noise_m": 0.08}),
    PolicySpec(name="reference", params={"assume_camera_of": "tabletop-pick-v1"}),
)

_PUSH_FAMILY = _family(
    _PUSH,
    {},
    {"perception_noise_m": 0.01},
    {"perception_noise_m": 0.025},
    {"stop_tolerance_m": 0.04},  # stops at the region's edge
    {"closed_loop": False},  # sees the puck once: cannot correct a push that turns it away
    {"perception_noise_m": 0.05},
    {"push_speed_m_s": 0.3},  # strikes the puck: it slides on past the target
)

_STACK_FAMILY = _family(
    _STACK,
    {},
    {"perception_noise_m": 0.004},
    {"perception_noise_m": 0.008},
    {"perception_noise_m": 0.015},
    {"release_height_m": 0.05},  # drops the block 5 cm onto the support
    {"perception_noise_m": 0.03},
    {"assume_camera_of": "tabletop-stack-v1"},  # the nominal camera, not the calibrated one
)

_DRAWER_FAMILY = _family(
    _DRAWER,
    {},
    {"perception_noise_m": 0.005},
    {"perception_noise_m": 0.01},
    {"open_to_m": 0.125},  # barely past the 0.12 m threshold
    {"perception_noise_m": 0.02},
    {"hook_depth_m": -0.025},  # fingertips above the bar's centre: they slip over it
    {"perception_noise_m": 0.04},
    {"assume_camera_of": "tabletop-drawer-v1"},  # the nominal camera, not the calibrated one
)


def _study(
    task: str,
    family: tuple[PolicySpec, ...],
    small: tuple[int, ...],
    *,
    max_steps: int = 300,
    transfer: Mapping[str, Any] | None = None,
) -> TaskStudy:
    """The study of ``task`` on its bundled world; ``small`` indexes the CI subset in ``family``.

    Every task runs under the default (realistic) hardware profile: its worlds section covers them all.
    """
    return TaskStudy(
        task=task,
        world=f"tabletop-{task}-v1",
        family=family,
        small_family=tuple(family[i] for i in small),
        profile=profile_path(),
        max_steps=max_steps,
        transfer=dict(transfer or {}),
    )


# The drawer reference's phases (above the handle, down to the bar, pull) look alike in one image and joint
# state and are told apart by time: its cloned policy needs the episode time as an input, and an action
# head that reads the image features (``r2s2r train``'s defaults and network), not only the estimated
# drawer position.  Pick's recipe (no time, the position only) leaves the tool hovering at the bar.
_TRAIN_RECIPE = {
    "time_input": True,
    "head_features": True,
    "teacher_forcing_m": 0.0,
    "channels": (16, 32, 32),
    "shift_px": 4,
    "steps": 3000,
}


TASK_STUDIES: dict[str, TaskStudy] = {
    "pick": _study("pick", _PICK_FAMILY, (0, 3, 4), max_steps=200),  # both pick policies succeed in ~12 s
    "push": _study("push", _PUSH_FAMILY, (0, 4, 5)),
    "stack": _study("stack", _STACK_FAMILY, (0, 3, 5), transfer={"expert": "reference"}),
    "drawer": _study(
        "drawer",
        _DRAWER_FAMILY,
        (0, 4, 6),
        transfer={"expert": "reference", "max_steps": 300, **_TRAIN_RECIPE},
    ),
}
"""Task name -> study settings; ``r2s2r closed-loop --task`` picks an entry."""


def task_study(name: str) -> TaskStudy:
    """The study settings of task ``name``.

    Raises:
        ValueError: an unknown task; the message lists the known ones.
    """
    if name not in TASK_STUDIES:
        raise ValueError(f"unknown task {name!r} (tasks: {sorted(TASK_STUDIES)})")
    return TASK_STUDIES[name]
