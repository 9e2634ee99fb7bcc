"""Messages to observations and actions to messages, checked against the sim node's message builders."""

from __future__ import annotations

import math

import numpy as np
import pytest
from geometry_msgs.msg import TransformStamped
from r2s2r_eval.nodes.conversions import (
    ConversionError,
    TfTree,
    action_to_messages,
    camera_info_to_k,
    depth_image_to_metres,
    joint_state_arrays,
    observation_from_messages,
    rgb_image_to_array,
    stamp_to_seconds,
    transform_to_matrix,
)
from r2s2r_eval.policy import Action, PolicyError
from r2s2r_sim.ros import conversions as rc
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage


def _tf(parent: str, child: str, pos: list[float], quat_wxyz: list[float]) -> TransformStamped:
    return rc.transform_msg(parent, child, np.array(pos), np.array(quat_wxyz), rc.time_msg(2_500_000_000))


def test_joint_state_and_stamp() -> None:
    msg = rc.joint_state_msg(
        rc.time_msg(1_500_000_000), ["a", "b"], np.array([1.0, 2.0]), np.array([0.1, 0.2]), np.zeros(2)
    )
    names, pos, vel = joint_state_arrays(msg)
    assert names == ("a", "b") and pos.tolist() == [1.0, 2.0] and vel.tolist() == [0.1, 0.2]
    assert stamp_to_seconds(msg.header.stamp) == 1.5
    no_vel = JointState(name=["a"], position=[1.0])
    assert joint_state_arrays(no_vel)[2].tolist() == [0.0]
    with pytest.raises(ConversionError, match="2 names but 1 positions"):
        joint_state_arrays(JointState(name=["a", "b"], position=[1.0]))


def test_images_round_trip() -> None:
    rgb = np.random.default_rng(0).integers(0, 255, (4, 6, 3), dtype=np.uint8)
    msg = rc.rgb_image_msg(rgb, rc.time_msg(0), "cam")
    assert np.array_equal(rgb_image_to_array(msg), rgb)
    bgr = Image(height=4, width=6, encoding="bgr8", step=18, data=rgb[..., ::-1].tobytes())
    assert np.array_equal(rgb_image_to_array(bgr), rgb)
    padded = Image(
        height=4,
        width=6,
        encoding="rgb8",
        step=20,
        data=np.pad(rgb.reshape(4, 18), ((0, 0), (0, 2))).tobytes(),
    )
    assert np.array_equal(rgb_image_to_array(padded), rgb)
    mm = np.array([[0, 1000], [1234, 65535]], dtype=np.uint16)
    depth = depth_image_to_metres(rc.depth_image_msg(mm, rc.time_msg(0), "cam"))
    assert depth.dtype == np.float32 and math.isnan(depth[0, 0])
    assert depth[0, 1] == pytest.approx(1.0) and depth[1, 0] == pytest.approx(1.234)
    f32 = Image(height=1, width=2, encoding="32FC1", step=8, data=np.array([0.5, 0.0], np.float32).tobytes())
    out = depth_image_to_metres(f32)
    assert out[0, 0] == pytest.approx(0.5) and math.isnan(out[0, 1])


def test_image_failures() -> None:
    with pytest.raises(ConversionError, match="encoding 'mono8' not supported \\(expected rgb8 or bgr8\\)"):
        rgb_image_to_array(Image(height=1, width=1, encoding="mono8", step=1, data=b"\0"))
    with pytest.raises(ConversionError, match="encoding 'rgb8' not supported \\(expected 16UC1 or 32FC1\\)"):
        depth_image_to_metres(Image(height=1, width=1, encoding="rgb8", step=3, data=b"\0\0\0"))
    with pytest.raises(ConversionError, match="5 bytes do not match height 1 x step 6"):
        rgb_image_to_array(Image(height=1, width=2, encoding="rgb8", step=6, data=b"\0" * 5))


def test_camera_info() -> None:
    k = np.array([[500.0, 0, 319.5], [0, 500.0, 239.5], [0, 0, 1]])
    assert np.array_equal(camera_info_to_k(rc.camera_info_msg(k, 640, 480, rc.time_msg(0), "cam")), k)
    with pytest.raises(ConversionError, match="K has no valid focal length"):
        camera_info_to_k(CameraInfo())


def test_transform_and_tf_chain() -> None:
    # 90 deg about z, then 1 m along x.
    half = math.sqrt(0.5)
    mat = transform_to_matrix(_tf("world", "a", [1, 0, 0], [half, 0, 0, half]))
    assert np.allclose(mat @ [1, 0, 0, 1], [1, 1, 0, 1])
    tree = TfTree()
    tree.add(
        TFMessage(
            transforms=[
                _tf("world", "a", [1, 0, 0], [half, 0, 0, half]),
                _tf("a", "b", [0, 2, 0], [1, 0, 0, 0]),
                _tf("world", "c", [0, 0, 3], [1, 0, 0, 0]),
            ]
        )
    )
    assert np.allclose(tree.lookup("world", "b")[:3, 3], [-1, 0, 0])
    assert np.allclose(tree.lookup("c", "b")[:3, 3], [-1, 0, -3])
    assert np.allclose(tree.lookup("b", "world") @ tree.lookup("world", "b"), np.eye(4))
    assert tree.latest_stamp("world", "b") == 2.5
    tree.add([_tf("x", "y", [0, 0, 0], [1, 0, 0, 0])])
    with pytest.raises(ConversionError, match="no chain between 'world' and 'y'"):
        tree.lookup("world", "y")
    bad = _tf("world", "z", [0, 0, 0], [1, 0, 0, 0])
    bad.transform.rotation.w = 0.0
    with pytest.raises(ConversionError, match="invalid rotation quaternion"):
        transform_to_matrix(bad)


def test_observation_matches_sim_messages() -> None:
    stamp = rc.time_msg(3_000_000_000)
    js = rc.joint_state_msg(stamp, ["j"], np.array([0.5]), np.array([0.0]), np.array([0.0]))
    rgb = np.zeros((2, 3, 3), np.uint8)
    color = rc.rgb_image_msg(rgb, stamp, "cam")
    depth = rc.depth_image_msg(np.full((2, 3), 800, np.uint16), stamp, "cam")
    info = rc.camera_info_msg(np.diag([10.0, 10.0, 1.0]), 3, 2, stamp, "cam")
    obs = observation_from_messages(
        joint_state=js, color=color, depth=depth, camera_info=info, camera_pose=np.eye(4), base_pose=np.eye(4)
    )
    assert obs.stamp == 3.0 and obs.joint_names == ("j",)
    assert obs.depth is not None and np.allclose(obs.depth, 0.8)
    small = rc.depth_image_msg(np.full((1, 3), 800, np.uint16), stamp, "cam")
    with pytest.raises(PolicyError, match="depth must be aligned to colour"):
        observation_from_messages(joint_state=js, color=color, depth=small)


def test_action_messages_match_the_sim_command_parser() -> None:
    arm, grip = action_to_messages(Action(arm_positions=np.array([0.1, -0.2]), gripper=0.03))
    assert rc.command_array(arm).tolist() == [0.1, -0.2]
    assert rc.command_array(grip).tolist() == [0.03]
