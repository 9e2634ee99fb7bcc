"""The plug-in surface every scripted task policy shares: what it reads, and at which rates."""

from __future__ import annotations

from r2s2r_eval.policies.scripted.config import FrameParams
from r2s2r_eval.policy import ImageRequest, ObservationKind, Policy

__all__ = ["HARDWARE_OBSERVATIONS", "ScriptedPolicy"]

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
