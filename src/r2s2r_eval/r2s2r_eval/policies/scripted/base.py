"""The plug-in surface every scripted task policy shares: what it reads, and at which rates."""

from __future__ import annotations

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

    Its parameters carry ``control_rate_hz`` and the frames it reads (``image_width``, ``image_height``,
    ``image_rate_hz``).
    """

    requires = HARDWARE_OBSERVATIONS

    def control_rate_hz(self) -> float:
        """Rate (Hz) the policy asks to be called at."""
        return float(self.params.control_rate_hz)  # type: ignore[attr-defined]

    def image_request(self) -> ImageRequest:
        """The frames the policy reads: ``image_width`` x ``image_height`` at ``image_rate_hz``."""
        p = self.params
        return ImageRequest(width=p.image_width, height=p.image_height, rate_hz=p.image_rate_hz)  # type: ignore[attr-defined]
