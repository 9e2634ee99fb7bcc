"""What robot_state_publisher and realsense2_camera put on /tf, /tf_static and /robot_description.

Shared by the sim node and the emulated hardware node. Frame names come from the interface profile
(``frames``: world, base, ee, camera_link, camera_color_frame, camera_depth_frame,
camera_depth_optical_frame) and each camera's world.yaml ``frame_id`` (its colour optical frame).

* ``/robot_description``: the URDF of :class:`~r2s2r_sim.world.robot_description.RobotDescription` (transient
  local, depth 1, as robot_state_publisher latches it).
* ``/tf_static``: world -> base, every fixed joint (the end-effector link among them), and each camera's
  tree as realsense2_camera publishes it: camera_link -> colour frame -> colour optical frame and
  camera_link -> depth frame -> depth optical frame (aligned depth shares the colour optics, so both
  sensor frames coincide with camera_link), plus world -> camera_link for a fixed camera.
* ``/tf``: every moving joint's child link in its parent, and world -> camera_link of a moving camera.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mujoco
import numpy as np
from builtin_interfaces.msg import Time
from std_msgs.msg import String

from r2s2r_sim.interface import Interface
from r2s2r_sim.ros import conversions as conv
from r2s2r_sim.world.mesh_package import MeshPackage
from r2s2r_sim.world.robot_description import RobotDescription
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["RobotState", "camera_transforms", "describe_robot", "static_messages"]

_IDENTITY_WXYZ = np.array([1.0, 0.0, 0.0, 0.0])


def describe_robot(world: SimWorld, iface: Interface) -> RobotDescription:
    """The URDF tree of ``world``'s robot, its root named by the interface's ``base`` frame.

    Raises:
        RobotDescriptionError: the robot cannot be written as a URDF.
        InterfaceError: the profile lacks the ``base`` or ``ee`` frame.
    """
    model = world.model
    robot = world.config.robot
    ids = world.robot_body_ids
    root = next(b for b in sorted(ids) if int(model.body_parentid[b]) not in ids)
    ee = None
    if robot.ee_site is not None:
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, robot.prefix + robot.ee_site)
        ee = (iface.frame("ee"), site)
    return RobotDescription(
        model, root, prefix=robot.prefix, base_frame=iface.frame("base"), ee=ee, name=world.world_id
    )


def camera_transforms(
    iface: Interface,
    camera: str,
    optical_frame: str,
    optical_pose: tuple[np.ndarray, np.ndarray],
    stamp: Time,
) -> tuple[Any, list[Any]]:
    """``(world -> camera_link, the camera's fixed tree)`` from the colour optical frame's world pose."""
    link = iface.frame("camera_link", camera)
    color = iface.frame("camera_color_frame", camera)
    depth = iface.frame("camera_depth_frame", camera)
    depth_optical = iface.frame("camera_depth_optical_frame", camera)
    link_pos, link_quat = conv.camera_link_pose(*optical_pose)
    zero = np.zeros(3)
    mount = conv.transform_msg(iface.frame("world"), link, link_pos, link_quat, stamp)
    tree = [
        conv.transform_msg(link, color, zero, _IDENTITY_WXYZ, stamp),
        conv.transform_msg(color, optical_frame, zero, conv.LINK_TO_OPTICAL_WXYZ, stamp),
        conv.transform_msg(link, depth, zero, _IDENTITY_WXYZ, stamp),
        conv.transform_msg(depth, depth_optical, zero, conv.LINK_TO_OPTICAL_WXYZ, stamp),
    ]
    return mount, tree


class RobotState:
    """A world's robot description and link transforms as messages; rebuilt when the world changes.

    Args:
        world: the world whose robot is described.
        iface: the interface profile (frame names).
        meshes: the package mesh geoms are written to as STL, named in the URDF by ``package://`` URIs
            (``None``: the one in the user's cache folder, which the graph's viewers resolve).
    """

    def __init__(self, world: SimWorld, iface: Interface, meshes: MeshPackage | None = None) -> None:
        self.iface = iface
        self.meshes = meshes or MeshPackage()
        self.description = describe_robot(world, iface)
        self.urdf = self.description.urdf(self.meshes)

    def description_msg(self) -> String:
        """``/robot_description``'s message: the URDF text."""
        return String(data=self.urdf)

    def static_transforms(self, data: mujoco.MjData, stamp: Time) -> list[Any]:
        """The world -> base transform (from ``data``'s kinematics) and the fixed joints."""
        desc = self.description
        root = desc.links[0].name
        out = [conv.transform_msg(self.iface.frame("world"), root, *desc.root_pose(data), stamp)]
        fixed = desc.joint_poses(None, fixed=True)
        return out + [conv.transform_msg(p, c, pos, quat, stamp) for p, c, pos, quat in fixed]

    def moving_transforms(self, qpos: np.ndarray, stamp: Time) -> list[Any]:
        """``/tf``: each moving joint's child link in its parent at ``qpos`` (a copy taken under the lock)."""
        poses = self.description.joint_poses(qpos, fixed=False)
        return [conv.transform_msg(p, c, pos, quat, stamp) for p, c, pos, quat in poses]


def static_messages(
    robot: RobotState | None,
    world: SimWorld,
    iface: Interface,
    cameras: Iterable[tuple[str, str, bool]],
    stamp: Time,
) -> tuple[String | None, Any]:
    """``/robot_description`` (``None`` without a robot description) and ``/tf_static`` of a served world.

    Args:
        robot: the world's robot state; ``None``: only world -> base (from the world's base pose).
        world: the served world (its kinematics are current).
        iface: the interface profile (frame names).
        cameras: ``(name, colour optical frame, static)`` of each camera; a moving camera's world ->
            camera_link goes on /tf instead.
        stamp: the stamp of every transform.
    """
    if robot is not None:
        transforms = robot.static_transforms(world.data, stamp)
    else:
        transforms = [
            conv.transform_msg(iface.frame("world"), iface.frame("base"), *world.base_pose(), stamp)
        ]
    for name, frame_id, static in cameras:
        mount, tree = camera_transforms(iface, name, frame_id, world.camera_pose(name), stamp)
        transforms += [mount, *tree] if static else tree
    return (robot.description_msg() if robot is not None else None), conv.tf_message(transforms)
