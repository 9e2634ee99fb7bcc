"""The capture's hand-eye phase on the emulated unit: the board on the flange, then the camera's pose from it.

The in-process capture mounts the board on the emulated arm's tool site and carries it through the planned
poses; real2sim's extrinsics stage must find the profile's camera from the bag alone (the joints it
measured and the images), and refuse what cannot give an answer.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from r2s2r_capture.bags.reader import BagReader  # noqa: E402
from r2s2r_capture.bench import random_profile as R  # noqa: E402
from r2s2r_capture.bench import real2sim as B  # noqa: E402
from r2s2r_capture.calibration import camera as cal  # noqa: E402
from r2s2r_capture.calibration.charuco import board_pose_in_plane_geom  # noqa: E402
from r2s2r_capture.errors import CalibrationError, CaptureError  # noqa: E402
from r2s2r_capture.procedures.capture_config import PHASE_TOPIC, CaptureConfig  # noqa: E402
from r2s2r_capture.procedures.hand_eye_phase import HandEyeConfig, plan_hand_eye, tool_site  # noqa: E402
from r2s2r_capture.procedures.session import capture_emulated  # noqa: E402
from r2s2r_capture.real2sim.capture_data import check_capture, read_capture  # noqa: E402
from r2s2r_capture.real2sim.hand_eye_extrinsics import hand_eye_extrinsics  # noqa: E402
from r2s2r_sim.hardware.profile import load_hardware_profile  # noqa: E402
from r2s2r_sim.world.kinematics import KinematicArm  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402

WORLD = "tabletop-pick-v1"
PROFILE = R.IDEAL_PROFILE


@pytest.fixture(scope="module")
def hand_eye_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An in-process capture with the hand-eye extrinsics phase (short excitation, one scene frame)."""
    out = tmp_path_factory.mktemp("hand_eye") / "bag"
    exc = dataclasses.replace(CaptureConfig().excitation, duration_s=2.0)
    cfg = CaptureConfig(
        n_intrinsics_views=8, n_scene_frames=1, excitation=exc, extrinsics="hand_eye", slide=None
    )
    capture_emulated(out, profile=PROFILE, world=WORLD, config=cfg)
    return out


def test_the_bag_holds_one_frame_and_the_measured_joints_per_pose(hand_eye_bag: Path) -> None:
    marks = []
    with BagReader(hand_eye_bag) as reader:
        for m in reader.messages([PHASE_TOPIC]):
            marks.append(json.loads(reader.deserialize(m).data))
    views = [m for m in marks if m["phase"] == "hand_eye" and m["event"] == "start" and "index" in m]
    assert len(views) >= 5
    assert not any(m["phase"] == "board_known_pose" for m in marks)
    world = SimWorld(world_path(WORLD))
    assert all(m["joints"] == list(world.arm_joint_names) for m in views)
    # The poses differ: the arm carried the board, it did not hold still.
    q = np.array([m["q"] for m in views])
    assert np.ptp(q, axis=0).max() > 0.1
    data = read_capture([hand_eye_bag], tuple(world.config.robot.arm_joints))
    assert len(data.hand_eye_views) == len(views)
    assert data.known_views == []
    check_capture(data, min_board_views=6, min_scene_frames=1)  # hand-eye views stand for known poses


def test_hand_eye_extrinsics_find_the_profiles_camera(hand_eye_bag: Path) -> None:
    world = SimWorld(world_path(WORLD))
    data = read_capture([hand_eye_bag], tuple(world.config.robot.arm_joints))
    intr = cal.calibrate_intrinsics(data.board_views, data.board, min_views=6)
    he = hand_eye_extrinsics(data.hand_eye_views, world_path(WORLD), intr, data.board)
    profile = load_hardware_profile(PROFILE)
    true_R = profile.camera.pose.matrix() @ B._LINK_TO_OPTICAL
    T = he.result.T_world_camera
    assert 1000 * np.linalg.norm(T[:3, 3] - np.array(profile.camera.pose.position)) < 3.0
    assert B._rot_deg(T[:3, :3].T @ true_R) < 0.3
    assert he.result.rms_px < 0.5
    # The jackknife's errors are small and not zero: the views agree, each one counts.
    assert 0.0 < he.std[0] < 0.003 and 0.0 < he.std[1] < np.radians(0.3)
    # The solve found the board where the stand-in mounted it on the tool site.
    mounted = HandEyeConfig().T_flange_geom @ board_pose_in_plane_geom(data.board)
    np.testing.assert_allclose(he.result.T_flange_board[:3, 3], mounted[:3, 3], atol=0.003)


def test_the_intrinsics_take_the_flange_views_beside_the_hand_held_ones(hand_eye_bag: Path) -> None:
    world = SimWorld(world_path(WORLD))
    data = read_capture([hand_eye_bag], tuple(world.config.robot.arm_joints))
    images = data.board_images()
    assert len(images) == len(data.board_views) + len(data.hand_eye_views)
    names = [name for name, _ in images]
    assert len(set(names)) == len(names) and any(name.startswith("hand_eye") for name in names)
    intr = cal.calibrate_intrinsics(images, data.board, min_views=6)
    assert intr.n_views == len(images)  # every flange view shows the whole board
    K = load_hardware_profile(PROFILE).camera.intrinsics.k()
    rows, cols = [0, 1, 0, 1], [0, 1, 2, 2]
    assert np.abs(intr.camera_matrix - K)[rows, cols].max() < 2.0, (intr.camera_matrix, K)


def test_views_of_another_arm_are_refused_naming_the_joints(hand_eye_bag: Path) -> None:
    world = SimWorld(world_path(WORLD))
    data = read_capture([hand_eye_bag], tuple(world.config.robot.arm_joints))
    intr = cal.calibrate_intrinsics(data.board_views, data.board, min_views=6)
    renamed = [({f"other_{k}": v for k, v in q.items()}, rgb) for q, rgb in data.hand_eye_views]
    with pytest.raises(CalibrationError, match="not in its marker"):
        hand_eye_extrinsics(renamed, world_path(WORLD), intr, data.board)


def test_a_camera_the_arm_cannot_hold_the_board_toward_is_refused_before_anything_moves() -> None:
    world = SimWorld(world_path(WORLD))
    kin = KinematicArm(world.model, tuple(world.arm_joint_names), tool_site(world))
    far = np.eye(4)
    far[:3, 3] = (8.0, 0.0, 1.0)  # 8 m away, looking along +x: out of every reach
    names = list(world.joint_names)
    home = world.joint_state()[0][[names.index(n) for n in world.arm_joint_names]]
    with pytest.raises(CaptureError, match=r"reaches \d+ of 12 poses"):
        plan_hand_eye(kin, far, home, HandEyeConfig())


def test_an_unknown_extrinsics_method_is_refused() -> None:
    with pytest.raises(CaptureError, match="extrinsics must be one of"):
        CaptureConfig(extrinsics="tape_measure")
