"""The plug-in surface every scripted task policy shares: what it reads, and at which rates."""

from __future__ import annotations

import enum
from typing import Any, ClassVar

from r2s2r_eval.policies.scripted.config import FrameParams
from r2s2r_eval.policies.scripted.motion import CartesianMover, StepClock
from r2s2r_eval.policy import EpisodeInfo, ImageRequest, ObservationKind, Policy, PolicyParams

__all__ = ["HARDWARE_OBSERVATIONS", "PhasedPolicy", "ScriptedPolicy"]

# What a real cell gives a policy: joint positions, RGB-D with its intrinsics, the camera's pose (TF).
HARDWARE_OBSERVATIONS = frozenset(
    {
        ObservationKind.JOINT_STATE,
        ObservationKind.RGB,
        ObservationKind.DEPTH,
        ObservationKind.CAMERA_INFO,
        ObservationKind.CAMERA_POSE,
    }
)


class ScriptedPolicy(Policy, base=True):
    """A scripted policy on hardware observations, paced by its parameters.

    Its parameters are :class:`~r2s2r_eval.policies.scripted.config.FrameParams` (the frames it reads) with
    a ``control_rate_hz``.
    """

    requires = HARDWARE_OBSERVATIONS

    def control_rate_hz(self) -> float:
        """Rate (Hz) the policy asks to be called at."""
        return float(self.params.control_rate_hz)  # type: ignore[attr-defined]

    def image_request(self) -> ImageRequest:
        """The frames the policy reads (:meth:`FrameParams.image_request`)."""
        params: FrameParams = self.params  # type: ignore[assignment]
        return params.image_request()


class PhasedPolicy(Policy, base=True):
    """A policy scripted as a sequence of phases, the members of an enum with a ``DONE`` member.

    The subclass names its ``first_phase``, starts each episode there with :meth:`_start_script` and moves
    ``_phase`` on in ``act``; the policy is :attr:`done` once it reaches ``DONE`` (the subclass's script
    says when).
    """

    first_phase: ClassVar[enum.Enum]
    _mover: CartesianMover | None

    def __init__(self, params: PolicyParams | None = None) -> None:
        """Build the policy, before its first episode (in ``first_phase``, no episode info yet)."""
        super().__init__(params)
        self._info: EpisodeInfo | None = None
        self._phase = self.first_phase

    def _start_script(self, info: EpisodeInfo, *, phase_start: float = 0.0) -> None:
        """Begin an episode at ``first_phase``: no motion planned, the step clock at the episode's period."""
        self._info = info
        self._phase = self.first_phase
        self._phase_start = phase_start
        self._clock = StepClock(info.control_period)
        self._mover = None

    @property
    def phase(self) -> Any:
        """The current phase."""
        return self._phase

    @property
    def done(self) -> bool:
        """True once the script has reached its ``DONE`` phase."""
        return self._phase is type(self._phase).DONE  # type: ignore[attr-defined]
