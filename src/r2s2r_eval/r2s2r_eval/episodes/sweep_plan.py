"""A sweep's inputs and plan: policies, the sweep config, the deterministic episode keys and seeds.

ROS-free. :func:`plan_sweep` turns a :class:`SweepConfig` into one :class:`EpisodeTask` per (policy,
variation, repeat); :mod:`r2s2r_eval.episodes.sweep` runs them.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from r2s2r_sim.variations import VariationConfig
from r2s2r_sim.variations.variation import Method

__all__ = [
    "EpisodeTask",
    "Executor",
    "PolicySpec",
    "SweepConfig",
    "SweepError",
    "episode_key",
    "episode_seed",
    "parse_policy_spec",
    "path_variations_digest",
    "plan_sweep",
    "variations_digest",
]


class SweepError(ValueError):
    """A sweep's inputs are invalid (policy, world, variations, executor, address, output path)."""


class Executor(enum.Enum):
    """Where episodes run."""

    LOCAL = "local"
    RAY = "ray"


@dataclass(frozen=True, kw_only=True)
class PolicySpec:
    """A policy and its parameters, as given to ``--policy NAME[:k=v,...]``.

    Attributes:
        name: registered policy name or ``package.module:Class``.
        params: parameter values (checked against the policy's parameter dataclass by ``load_policy``).
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def canonical(self) -> str:
        """``name`` and ``params`` as sorted JSON: what the episode key hashes."""
        return json.dumps({"name": self.name, "params": dict(self.params)}, sort_keys=True)

    def __str__(self) -> str:
        args = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}:{args}" if args else self.name


def parse_policy_spec(text: str) -> PolicySpec:
    """Parse ``NAME`` or ``NAME:k=v,k=v`` (values are YAML scalars: ``0.01``, ``true``, ``fast``).

    ``NAME`` may itself be ``package.module:Class``; the text after the last ``:`` is read as parameters
    only when it holds a ``=``.

    Raises:
        SweepError: an empty name, an item without ``=``, a repeated or empty key, or a value that is not
            a YAML scalar.
    """
    name, sep, tail = text.rpartition(":")
    if not sep or "=" not in tail:
        name, tail = text, ""
    name = name.strip()
    if not name:
        raise SweepError(f"--policy {text!r}: empty policy name (expected NAME[:k=v,...])")
    params: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in tail.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SweepError(f"--policy {text!r}: parameter {item!r} is not k=v")
        if key in params:
            raise SweepError(f"--policy {text!r}: parameter {key!r} given twice")
        try:
            parsed = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError as err:
            raise SweepError(f"--policy {text!r}: parameter {key!r}: cannot parse {value!r}") from err
        if isinstance(parsed, dict | list) or (isinstance(parsed, float) and not math.isfinite(parsed)):
            raise SweepError(f"--policy {text!r}: parameter {key!r} must be a finite scalar, got {value!r}")
        params[key] = parsed
    return PolicySpec(name=name, params=params)


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """What to sweep.

    Attributes:
        world: bundled world id or world folder.
        policies: policies to evaluate (each on every variation, ``repeats`` times).
        variations: the variation axis config.
        n: number of variations (indices ``0 .. n-1`` of the sweep).
        method: ``"sobol"`` (scrambled Sobol points) or ``"random"`` (one spawned seed per variation).
        seed: sweep seed (>= 0): seeds the Sobol scramble or the spawned seeds, and the episode seeds.
        repeats: episodes per (policy, variation), each with its own episode seed.
        camera_rate_hz: image rate (Hz); None: the world camera's rate.
        max_steps: control steps before an episode ends with ``max_steps``; None: the task's timeout.
        hardware_profile: the side: None for the simulated world, or a hardware profile YAML file for the
            emulated hardware built from it (then only the operator axes may be varied).
        render_profile: the world's render profile to draw cameras with; None: each camera's declared one.
        policy_images: draw images at the size and rate each policy requests (``Policy.image_request``);
            False: at the camera's size and rate, as the sim node publishes them.
    """

    world: str
    policies: tuple[PolicySpec, ...]
    variations: VariationConfig
    n: int
    method: Method = "sobol"
    seed: int = 0
    repeats: int = 1
    camera_rate_hz: float | None = None
    max_steps: int | None = None
    hardware_profile: str | None = None
    render_profile: str | None = None
    policy_images: bool = True

    def __post_init__(self) -> None:
        if not self.policies:
            raise SweepError("policies: give at least one --policy")
        labels = [p.canonical() for p in self.policies]
        if len(set(labels)) != len(labels):
            raise SweepError(f"policies: the same policy and parameters are given twice: {labels}")
        if self.n < 1:
            raise SweepError(f"n: number of variations must be >= 1, got {self.n}")
        if self.method not in ("sobol", "random"):
            raise SweepError(f"method: must be one of ['random', 'sobol'], got {self.method!r}")
        if self.seed < 0:
            raise SweepError(f"seed: must be >= 0, got {self.seed}")
        if self.repeats < 1:
            raise SweepError(f"repeats: must be >= 1, got {self.repeats}")
        if self.camera_rate_hz is not None and not (
            math.isfinite(self.camera_rate_hz) and self.camera_rate_hz > 0
        ):
            raise SweepError(f"camera_rate_hz: must be > 0 Hz, got {self.camera_rate_hz}")
        if self.max_steps is not None and self.max_steps < 1:
            raise SweepError(f"max_steps: must be >= 1, got {self.max_steps}")


def variations_digest(config: VariationConfig) -> str:
    """sha256 of the variation config's content, the same wherever its file lies.

    An axis that is off and at its defaults is left out, so that an axis a config does not use (e.g.
    ``dynamics``, off by default) does not change the keys of the episodes of configs without it.  The
    hashed document keeps a ``source`` entry, always null, so that a config built in code and one read
    from a file with the same content share a digest (and configs built in code keep their keys).
    """
    return _digest(config, source=None)


def path_variations_digest(config: VariationConfig) -> str | None:
    """The digest that also hashes the path of the file ``config`` was read from; None without a file.

    Results stores written with that digest key their episodes with it, so a sweep resumed from the same
    file accepts those keys as aliases (:attr:`EpisodeTask.key_aliases`).  A store written from another
    folder cannot be matched this way: the old path is not recorded in it.
    """
    if config.source is None:
        return None
    return _digest(config, source=str(config.source))


def _digest(config: VariationConfig, *, source: str | None) -> str:
    doc = dataclasses.asdict(config)
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value) and not value.enabled and value == type(value)():
            del doc[f.name]
    doc["source"] = source
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def episode_seed(sweep_seed: int, index: int, repeat: int) -> int:
    """The episode seed (world reset and policy stream) of variation ``index``, repeat ``repeat`` (32 bit)."""
    return int(np.random.SeedSequence([sweep_seed, index, repeat]).generate_state(1, np.uint32)[0])


def episode_key(
    *,
    policy: PolicySpec,
    world_hash: str,
    variations: str,
    method: str,
    seed: int,
    index: int,
    repeat: int,
    camera_rate_hz: float | None,
    max_steps: int | None,
    profile_sha256: str | None = None,
    render_profile: str | None = None,
    policy_images: bool = True,
) -> str:
    """The deterministic identity of one sweep episode (sha256 hex); ``variations`` is the config digest.

    ``profile_sha256``: the hardware profile's hash on the emulated side; None in sim.  How images are
    drawn is part of the identity only when it is not the default (the camera's declared profile, at the
    policy's requested size), so stores written before it existed keep their keys.
    """
    payload: dict[str, Any] = {
        "policy": policy.canonical(),
        "world_hash": world_hash,
        "variations": variations,
        "method": method,
        "seed": int(seed),
        "index": int(index),
        "repeat": int(repeat),
        "camera_rate_hz": camera_rate_hz,
        "max_steps": max_steps,
    }
    if profile_sha256 is not None:
        payload["side"] = {"emulated_hardware": profile_sha256}
    if render_profile is not None:
        payload["render_profile"] = render_profile
    if not policy_images:
        payload["policy_images"] = False
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class EpisodeTask:
    """One episode to run: everything a worker needs, picklable.

    Attributes:
        key: :func:`episode_key`.
        key_aliases: keys a stored row of this episode may carry instead of ``key``: the key made with
            :func:`path_variations_digest` when the config was read from a file.
        world: the world folder.
        world_id: the world's id.
        world_hash: hash of the base (unvaried) world.
        variations: the variation config.
        variations_digest: :func:`variations_digest` of ``variations``.
        method, sweep_seed, index: which variation (``sweep_variation(variations, seed=sweep_seed,
            index=index, method=method)``).
        repeat: repeat number.
        episode_index: index told to the policy (``index * repeats + repeat``).
        seed: the episode seed.
        policy: the policy.
        camera_rate_hz, max_steps: passed to :meth:`EpisodeRunner.run`.
        hardware_profile, profile_sha256: the emulated side's profile file and its hash; None in sim.
        render_profile, policy_images: passed to :class:`EpisodeRunner`.
    """

    key: str
    world: str
    world_id: str
    world_hash: str
    variations: VariationConfig
    variations_digest: str
    method: Method
    sweep_seed: int
    index: int
    repeat: int
    episode_index: int
    seed: int
    policy: PolicySpec
    camera_rate_hz: float | None
    max_steps: int | None
    hardware_profile: str | None = None
    profile_sha256: str | None = None
    render_profile: str | None = None
    policy_images: bool = True
    key_aliases: tuple[str, ...] = ()


def plan_sweep(
    cfg: SweepConfig,
    *,
    world_dir: str | Path,
    world_id: str,
    world_hash: str,
    profile_sha256: str | None = None,
) -> list[EpisodeTask]:
    """All episodes of ``cfg`` in order (variation index, then policy, then repeat).

    ``profile_sha256``: hash of ``cfg.hardware_profile`` (needed when it is set).
    """
    if (cfg.hardware_profile is None) != (profile_sha256 is None):
        raise SweepError("plan_sweep: profile_sha256 is needed exactly when hardware_profile is set")
    digest = variations_digest(cfg.variations)
    alias_digests = [d for d in (path_variations_digest(cfg.variations),) if d is not None and d != digest]

    def key(variations: str, policy: PolicySpec, index: int, repeat: int) -> str:
        return episode_key(
            policy=policy,
            world_hash=world_hash,
            variations=variations,
            method=cfg.method,
            seed=cfg.seed,
            index=index,
            repeat=repeat,
            camera_rate_hz=cfg.camera_rate_hz,
            max_steps=cfg.max_steps,
            profile_sha256=profile_sha256,
            render_profile=cfg.render_profile,
            policy_images=cfg.policy_images,
        )

    tasks = []
    for index in range(cfg.n):
        for policy in cfg.policies:
            for repeat in range(cfg.repeats):
                tasks.append(
                    EpisodeTask(
                        key=key(digest, policy, index, repeat),
                        world=str(world_dir),
                        world_id=world_id,
                        world_hash=world_hash,
                        variations=cfg.variations,
                        variations_digest=digest,
                        method=cfg.method,
                        sweep_seed=cfg.seed,
                        index=index,
                        repeat=repeat,
                        episode_index=index * cfg.repeats + repeat,
                        seed=episode_seed(cfg.seed, index, repeat),
                        policy=policy,
                        camera_rate_hz=cfg.camera_rate_hz,
                        max_steps=cfg.max_steps,
                        hardware_profile=cfg.hardware_profile,
                        profile_sha256=profile_sha256,
                        render_profile=cfg.render_profile,
                        policy_images=cfg.policy_images,
                        key_aliases=tuple(key(d, policy, index, repeat) for d in alias_digests),
                    )
                )
    return tasks
