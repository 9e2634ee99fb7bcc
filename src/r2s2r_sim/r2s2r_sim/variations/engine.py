"""Sampling and applying variations: ``(seed, VariationConfig) -> Variation -> edited MjSpec``.

A variation is a point of the unit cube ``[0, 1)^d`` (one coordinate per dimension of every enabled axis,
in registry order) mapped by each axis onto its ranges.  :func:`sample_variation` draws the point from
``np.random.default_rng(seed)`` (training); :func:`sample_sweep` draws ``n`` points from a scrambled Sobol
sequence (sweeps, low discrepancy) or from per-variation seeds.  Nothing here reads the global RNG, and
nothing touches the episode runner: :func:`apply_variation` only edits an ``MjSpec``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from functools import partial
from pathlib import Path

import mujoco
import numpy as np

from r2s2r_sim.tasks.registry import ObjectPose
from r2s2r_sim.variations.config import (
    AXES,
    AXIS_NAMES,
    VariationConfig,
    VariationError,
    load_variation_config,
)
from r2s2r_sim.variations.sensor import sensor_effects
from r2s2r_sim.variations.variation import Method, Variation
from r2s2r_sim.world.config import WorldConfig, load_world_config
from r2s2r_sim.world.geom_keys import geom_address, gripper_contact_geoms
from r2s2r_sim.world.kinematics import KinematicArm, reaches_tool_down
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLD_VARIATIONS_FILE

__all__ = [
    "VariedWorld",
    "apply_variation",
    "dimension_names",
    "initial_state_offsets",
    "for_world",
    "make_world",
    "sample_sweep",
    "sample_variation",
    "sobol_points",
    "sweep_variation",
    "variation_from_unit",
    "with_world_axes",
]


def dimension_names(config: VariationConfig) -> tuple[str, ...]:
    """Names (``"<axis>.<dim>"``) of the unit-cube coordinates of ``config``; disabled axes have none."""
    return tuple(f"{a}.{d}" for a in config.enabled_axes() for d in AXES[a].dims(config.axis(a)))


def variation_from_unit(
    config: VariationConfig,
    unit: np.ndarray | tuple[float, ...],
    *,
    seed: int,
    index: int = 0,
    method: Method = "random",
) -> Variation:
    """Realise the variation at a unit-cube point.

    Raises:
        VariationError: if the point has the wrong size or leaves ``[0, 1)``, or an axis cannot realise it
            (e.g. clutter that does not fit).
    """
    point = tuple(float(u) for u in np.asarray(unit, dtype=np.float64).reshape(-1))
    names = dimension_names(config)
    if len(point) != len(names):
        raise VariationError(
            f"unit point has {len(point)} coordinates, the config needs {len(names)}: {names}"
        )
    if not all(0.0 <= u <= 1.0 for u in point):
        raise VariationError(f"unit point must lie in [0, 1]^{len(names)}, got {point}")
    params: dict[str, float] = {}
    k = 0
    for axis_name in config.enabled_axes():
        axis, cfg = AXES[axis_name], config.axis(axis_name)
        d = len(axis.dims(cfg))
        values = axis.realise(cfg, tuple(min(u, math.nextafter(1.0, 0.0)) for u in point[k : k + d]), params)
        params.update({f"{axis_name}.{n}": float(v) for n, v in values.items()})
        k += d
    return Variation(
        seed=int(seed), config=config, method=method, index=int(index), unit=point, params=params
    )


def sample_variation(config: VariationConfig, seed: int) -> Variation:
    """The variation of ``seed`` for training: unit point ``np.random.default_rng(seed).random(d)``."""
    d = len(dimension_names(config))
    return variation_from_unit(config, np.random.default_rng(seed).random(d), seed=seed)


def sobol_points(config: VariationConfig, n: int, *, seed: int, start: int = 0) -> np.ndarray:
    """Points ``start .. start + n - 1`` of the scrambled Sobol sequence of ``config``'s dimension, (n, d)."""
    if n < 0 or start < 0:
        raise VariationError(f"n and start must be >= 0, got n={n}, start={start}")
    d = len(dimension_names(config))
    if d == 0:
        return np.zeros((n, 0))
    from scipy.stats import qmc  # scipy.stats takes seconds to import; every sweep worker imports this module

    engine = qmc.Sobol(d, scramble=True, seed=seed)
    if start:
        engine.fast_forward(start)
    with warnings.catch_warnings():
        # Balance is best for powers of two; any n is still a valid prefix of the sequence.
        warnings.filterwarnings("ignore", message=".*balance properties.*")
        return engine.random(n)


def _random_seeds(seed: int, n: int) -> list[int]:
    return [int(c.generate_state(1, dtype=np.uint64)[0]) for c in np.random.SeedSequence(seed).spawn(n)]


def sample_sweep(config: VariationConfig, n: int, *, seed: int, method: Method = "sobol") -> list[Variation]:
    """``n`` variations for a sweep.

    ``"sobol"``: the first ``n`` points of the scrambled Sobol sequence seeded with ``seed`` (low
    discrepancy; ``n`` a power of two balances best).  ``"random"``: ``sample_variation`` with ``n`` seeds
    spawned from ``seed`` (each variation's own seed is in ``Variation.seed``).
    """
    if method == "sobol":
        points = sobol_points(config, n, seed=seed)
        return [
            variation_from_unit(config, p, seed=seed, index=i, method="sobol") for i, p in enumerate(points)
        ]
    if method == "random":
        out = []
        for i, s in enumerate(_random_seeds(seed, n)):
            v = sample_variation(config, s)
            out.append(dataclasses.replace(v, index=i))
        return out
    raise VariationError(f"unknown sampling method {method!r} (methods: ['random', 'sobol'])")


def sweep_variation(config: VariationConfig, *, seed: int, index: int, method: Method = "sobol") -> Variation:
    """Variation ``index`` of ``sample_sweep(config, n, seed=seed, method=method)`` for any ``n > index``."""
    if method == "sobol":
        point = sobol_points(config, 1, seed=seed, start=index)[0]
        return variation_from_unit(config, point, seed=seed, index=index, method="sobol")
    if method == "random":
        v = sample_variation(config, _random_seeds(seed, index + 1)[index])
        return dataclasses.replace(v, index=index)
    raise VariationError(f"unknown sampling method {method!r} (methods: ['random', 'sobol'])")


def apply_variation(spec: mujoco.MjSpec, variation: Variation) -> None:
    """Edit a composed world ``spec`` in place; disabled axes leave it untouched.

    Raises:
        VariationError: if the config names something the world lacks.
    """
    for name in variation.config.enabled_axes():
        AXES[name].apply(spec, variation.config.axis(name), variation.axis_params(name))


def initial_state_offsets(variation: Variation) -> dict[str, float]:
    """Joint name -> start offset from home (rad or m); empty when ``robot_state`` is disabled."""
    return variation.axis_params("robot_state")


def object_pose_of(variation: Variation, config: WorldConfig) -> ObjectPose | None:
    """The task object's start pose that ``variation`` sets (``objects`` axis), None when it sets none.

    Raises:
        VariationError: ``objects.body`` is not the task object of ``config``'s world.
    """
    obj = variation.axis_params("objects")
    if not obj:
        return None
    if config.task is None or config.task.object_body != variation.config.objects.body:
        raise VariationError(
            f"objects.body: {variation.config.objects.body!r} is not the task object of "
            f"{config.source} ({None if config.task is None else config.task.object_body!r})"
        )
    return ObjectPose(obj["x"], obj["y"], obj["yaw"])


class VariedWorld(SimWorld):
    """A :class:`SimWorld` with a variation applied to its spec before compilation.

    At reset the task object starts at the variation's pose (``objects`` axis; otherwise ``world.yaml``'s
    randomisation with the reset seed) and the arm at home plus the ``robot_state`` offsets, clipped to the
    joint limits, with the servos commanded there.  Its camera frames get the ``sensor`` axis's effects
    (:attr:`sensors`).
    """

    def __init__(
        self, world_dir: str | Path, variation: Variation, *, config: WorldConfig | None = None
    ) -> None:
        self.variation = variation
        cfg = config if config is not None else load_world_config(world_dir)
        self.object_pose = object_pose_of(variation, cfg)
        offsets = initial_state_offsets(variation)
        arm = set(cfg.robot.arm_joints)
        for i, joint in enumerate(offsets):
            if joint not in arm:
                raise VariationError(
                    f"robot_state.joints[{i}]: {joint!r} is not an arm joint of {cfg.source} "
                    f"(arm joints: {list(cfg.robot.arm_joints)})"
                )
        self._offsets = np.array([offsets.get(j, 0.0) for j in cfg.robot.arm_joints])
        super().__init__(world_dir, config=cfg, spec_editor=partial(apply_variation, variation=variation))
        self.sensors = sensor_effects(variation)

    def reset(self, seed: int, *, object_pose: ObjectPose | None = None) -> None:
        """Reset as :meth:`SimWorld.reset` (the object at the variation's pose), then offset the arm."""
        super().reset(seed, object_pose=object_pose if object_pose is not None else self.object_pose)
        if not np.any(self._offsets):
            return
        n = len(self.arm_joint_names)
        home = self.joint_state()[0][:n]
        start = np.clip(home + self._offsets, self.arm_limits[:, 0], self.arm_limits[:, 1])
        prefix = self.config.robot.prefix
        for name, q in zip(self.arm_joint_names, start, strict=True):
            self.data.joint(prefix + name).qpos[0] = q
        self.set_arm_command(start, immediate=True)
        mujoco.mj_forward(self.model, self.data)


def for_world(config: VariationConfig, world_dir: str | Path, *, check: bool = True) -> VariationConfig:
    """``config`` made for the world of ``world_dir``, checked against it before any episode.

    An empty ``robot_state.joints`` becomes the world's arm joints, an empty ``contact.geoms`` (when that
    axis is on) the geoms that move with its gripper's joints.  Every name the config gives
    (materials, geoms, bodies, lights, cameras, joints) is checked, when ``check``, by applying the
    config's middle variation to the world once.

    Raises:
        VariationError: naming the field and the names the world lacks.
        WorldError: the world itself does not load.
    """
    world_cfg = load_world_config(world_dir)
    robot_state = config.robot_state
    if robot_state.enabled and not robot_state.joints:
        config = dataclasses.replace(
            config, robot_state=dataclasses.replace(robot_state, joints=world_cfg.robot.arm_joints)
        )
    contact = config.contact
    if contact.enabled and not contact.geoms:
        pads = _gripper_pads(world_dir)
        if not pads:
            raise VariationError(
                f"contact.geoms: world {world_dir} has no colliding geom that moves with a gripper joint; "
                "name the pads"
            )
        config = dataclasses.replace(config, contact=dataclasses.replace(contact, geoms=pads))
    if check:
        middle = variation_from_unit(config, np.full(len(dimension_names(config)), 0.5), seed=0)
        world = VariedWorld(world_dir, middle, config=world_cfg)
        if config.objects.enabled and world_cfg.robot.ee_site is not None:
            _check_object_reach(config, world, Path(world_dir))
    return config


def _gripper_pads(world_dir: str | Path) -> tuple[str, ...]:
    """The keys, as the composed world names them, of the colliding geoms moving with the gripper's joints."""
    world = SimWorld(world_dir)
    return tuple(
        geom_address(world.model, g) for g in gripper_contact_geoms(world.model, world.gripper_joint_names)
    )


def _check_object_reach(config: VariationConfig, world: SimWorld, world_dir: Path) -> None:
    """Refuse an object region whose corners the world's arm does not reach tool-down.

    A region drawn for another arm (the package's defaults on a smaller arm's world) would fail its
    episodes silently; the corners are checked at the object's own height, from the world's home, with
    the inverse kinematics the reference policy plans with.
    """
    SimWorld.reset(world, 0)  # home, without the variation's arm offsets
    robot = world.config.robot
    assert robot.ee_site is not None
    arm = KinematicArm(
        world.model, tuple(robot.prefix + j for j in robot.arm_joints), robot.prefix + robot.ee_site
    )
    home = world.joint_state()[0][: len(world.arm_joint_names)].copy()
    first = world.model.joint(robot.prefix + robot.arm_joints[0]).id
    axis = world.data.xanchor[first][:2].copy()
    objects = config.objects
    z = float(world.data.body(objects.body).xpos[2])
    missed = [
        (x, y)
        for x in objects.x
        for y in objects.y
        if not reaches_tool_down(arm, home, axis, np.array([x, y, z]))
    ]
    if missed:
        where = f"{config.source}: " if config.source is not None else ""
        corners = ", ".join(f"({x:.3f}, {y:.3f})" for x, y in missed)
        raise VariationError(
            f"{where}objects.x {list(objects.x)}, objects.y {list(objects.y)}: refused, the arm of world "
            f"{world_dir} does not reach the corner(s) {corners} m tool-down; draw the object where it "
            f"reaches (`r2s2r world new` writes such a {WORLD_VARIATIONS_FILE} beside its world)"
        )


def with_world_axes(config: VariationConfig, world_dir: str | Path) -> VariationConfig:
    """``config`` with every axis that the world folder's own ``variations.yaml`` enables taken from it.

    A study's axes (e.g. an operator's object poses, lighting and clutter) then meet what the world's
    file declares (for a reconstructed world: what the capture could not pin down), checked against the
    world.  The world's axes come last in registry order when the study's are the first ones, so the
    study's coordinates of a seeded draw do not move.

    Raises:
        VariationError: the world has no ``variations.yaml``, or it does not fit the world.
    """
    path = Path(world_dir) / WORLD_VARIATIONS_FILE
    if not path.is_file():
        raise VariationError(
            f"{path}: no such file; a world reconstructed by `r2s2r real2sim` carries its variation defaults "
            "there (reconstruct the world again to get them)"
        )
    own = load_variation_config(path)
    merged = dataclasses.replace(
        config, **{a: own.axis(a) for a in AXIS_NAMES if own.axis(a).enabled}, source=None
    )
    return for_world(merged, world_dir)


def make_world(world_dir: str | Path, variation: Variation) -> VariedWorld:
    """Build the world of ``world_dir`` with ``variation`` applied (see :class:`VariedWorld`)."""
    return VariedWorld(world_dir, variation)
