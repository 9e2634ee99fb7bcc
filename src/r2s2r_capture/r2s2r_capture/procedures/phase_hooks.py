"""What a scripted capture phase drives the emulated arm and the bag with.

The articulation and slide phases (:mod:`r2s2r_capture.procedures.articulation`,
:mod:`r2s2r_capture.procedures.slide`) script the arm;
:func:`r2s2r_capture.procedures.session.capture_emulated` hands them these callbacks, which advance the
emulator and write what a real driver and camera would publish.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from r2s2r_capture.errors import CaptureError

__all__ = ["REACH_TOL_M", "PhaseHooks", "ik_path"]

REACH_TOL_M = 0.005  # IK position error beyond which a point is out of reach (m)


@dataclasses.dataclass(frozen=True)
class PhaseHooks:
    """Callbacks of one capture phase.

    Attributes:
        marker: ``marker(part, event, **extra)`` writes a phase marker (``/r2s2r/capture/phase``).
        command: sends one arm command and advances the emulator one command period, publishing states.
        hold: advances (s) without new commands, publishing joint states.
        frames: records ``n`` RGB-D frames.
        gripper: sends a gripper command.
    """

    marker: Callable[..., None]
    command: Callable[[np.ndarray], None]
    hold: Callable[[float], None]
    frames: Callable[[int], None]
    gripper: Callable[[float], None]


def ik_path(
    kin: Any, points: np.ndarray, q0: np.ndarray, rot: np.ndarray, *, phase: str, partial: bool = False
) -> list[np.ndarray]:
    """Joint positions putting the tool at each of ``points`` with orientation ``rot``, each IK from the last.

    Args:
        kin: the arm's :class:`~r2s2r_sim.world.kinematics.KinematicArm`.
        points: tool positions (N, 3), m, world frame.
        q0: joint positions to start from.
        rot: tool orientation (3x3).
        phase: the phase's name, for the error.
        partial: stop at the first point out of reach instead of failing (when any was reached).

    Raises:
        CaptureError: a point out of reach (naming it and by how far).
    """
    out, q = [], q0
    for p in points:
        q, err = kin.ik(p, rot, q, iterations=100)
        if err > REACH_TOL_M:
            if partial and out:
                break
            raise CaptureError(f"{phase}: the arm cannot reach {np.round(p, 3).tolist()} ({err:.3f} m off)")
        out.append(q)
    return out
