"""The camera's pose from the capture's ``hand_eye`` views: flange poses by forward kinematics, then a solve.

Each view holds the arm joints' measured positions and the image of the board on the flange; the flange
pose is the template robot's forward kinematics at those positions (the same robot the world is built on),
and :func:`~r2s2r_capture.calibration.hand_eye.solve_hand_eye` finds the camera in the world and the board
on the flange together.  The pose's standard errors are the jackknife's over the views.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from r2s2r_sim.world.kinematics import KinematicArm
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.calibration.camera import IntrinsicsResult, detect_board, rotation_angle_deg
from r2s2r_capture.calibration.charuco import CharucoBoardSpec
from r2s2r_capture.calibration.hand_eye import HandEyeResult, HandEyeView, solve_hand_eye
from r2s2r_capture.errors import CalibrationError
from r2s2r_capture.procedures.hand_eye_phase import tool_site

__all__ = ["HandEyeExtrinsics", "hand_eye_extrinsics"]


@dataclasses.dataclass(frozen=True)
class HandEyeExtrinsics:
    """The solve, and the jackknife standard errors of the camera's position (m) and angle (rad)."""

    result: HandEyeResult
    std: tuple[float, float]


def _views(
    samples: Sequence[tuple[dict[str, float], np.ndarray]], template: Path, board: CharucoBoardSpec
) -> list[HandEyeView]:
    world = SimWorld(template)
    joints = tuple(world.arm_joint_names)
    kin = KinematicArm(world.model, joints, tool_site(world))
    views = []
    for i, (positions, rgb) in enumerate(samples):
        missing = [n for n in joints if n not in positions]
        if missing:
            raise CalibrationError(
                f"hand_eye view {i}: joints {missing} of the template's arm are not in its marker "
                f"(it has {sorted(positions)}); capture with the template's robot"
            )
        pos, rot = kin.fk(np.array([positions[n] for n in joints]))
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = rot, pos
        name = f"hand_eye view {i}"
        views.append(HandEyeView(T_world_flange=T, detection=detect_board(rgb, board, name=name), name=name))
    return views


def hand_eye_extrinsics(
    samples: Sequence[tuple[dict[str, float], np.ndarray]],
    template: Path,
    intrinsics: IntrinsicsResult,
    board: CharucoBoardSpec,
) -> HandEyeExtrinsics:
    """``T_world_camera`` from the hand-eye views of a capture (see the module docstring).

    Args:
        samples: each view's measured arm joint positions by name and its colour image.
        template: the template world folder (its robot's kinematics and tool site).
        intrinsics: the camera's calibration from the hand-held views.
        board: the board on the flange.

    Raises:
        CalibrationError: a view without the template arm's joints, or what the solve refuses (too few
            views with enough corners, rotations about fewer than two axes).
    """
    views = _views(samples, template, board)
    result = solve_hand_eye(views, intrinsics, board)
    used = [v for v in views if v.name in result.view_names]
    positions, angles = [], []
    for i in range(len(used)):
        try:
            T = solve_hand_eye(used[:i] + used[i + 1 :], intrinsics, board).T_world_camera
        except CalibrationError:
            continue  # a view the observability needs: its leave-one-out has no answer
        positions.append(float(np.linalg.norm(T[:3, 3] - result.T_world_camera[:3, 3])))
        angles.append(np.radians(rotation_angle_deg(T[:3, :3] @ result.T_world_camera[:3, :3].T)))
    n = len(positions)
    # Jackknife: sqrt((n - 1) / n * sum of squared deviations) of the leave-one-out estimates.
    scale = (n - 1) / n if n > 1 else 0.0
    std = (
        float(np.sqrt(scale * np.sum(np.square(positions)))),
        float(np.sqrt(scale * np.sum(np.square(angles)))),
    )
    return HandEyeExtrinsics(result, std)
