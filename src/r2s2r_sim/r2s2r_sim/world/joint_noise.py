"""The noise of a driver's joint readings, as the sim reports them.

A real arm's ``/joint_states`` carry encoder quantisation and electrical noise, and a policy that judges
its grip or its arrival from those readings behaves differently with them.  A world may declare the noise
its hardware showed (``robot.joint_state_noise`` in world.yaml; ``r2s2r real2sim`` measures it from the
capture): the sim then adds white noise of that size to the positions and velocities it reports, drawn
from the episode's seed, so an episode reads the same noise on every run.  The physics and the task's
judge always use the true state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from r2s2r_sim.errors import WorldError

__all__ = ["JointReadings", "JointStateNoise"]

# Mixed into the episode seed so that the readings' noise is its own stream (not the task's placement).
_STREAM = 0x4A53


@dataclass(frozen=True, kw_only=True)
class JointStateNoise:
    """White noise of the reported joint states (std; rad or m, and rad/s or m/s per joint kind)."""

    position_std: float = 0.0
    velocity_std: float = 0.0

    def __post_init__(self) -> None:
        for name, most in (("position_std", 1.0), ("velocity_std", 10.0)):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= most):
                raise WorldError(f"{name}: must be within [0, {most:g}], got {value}")

    @property
    def ideal(self) -> bool:
        """No noise: the readings are the true state."""
        return self.position_std == 0.0 and self.velocity_std == 0.0


class JointReadings:
    """Adds a world's joint-state noise to true readings, seeded per episode."""

    def __init__(self, noise: JointStateNoise) -> None:
        self.noise = noise
        self._rng = np.random.default_rng([0, _STREAM])

    def start_episode(self, seed: int) -> None:
        """Draw the noise of episode ``seed`` from here on."""
        self._rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, _STREAM])

    def measure(self, position: np.ndarray, velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The readings of the true ``position`` and ``velocity`` (new arrays; untouched when ideal)."""
        if self.noise.ideal:
            return position, velocity
        return (
            position + self._rng.normal(0.0, self.noise.position_std, position.shape),
            velocity + self._rng.normal(0.0, self.noise.velocity_std, velocity.shape),
        )
