"""A world's robot as a URDF and its link transforms, as robot_state_publisher gives them; no rclpy.

Links are the robot's bodies (the world's robot prefix removed; the root renamed to the interface's base
frame) plus a fixed end-effector link at the world's ``ee_site``. Each body with one hinge or slide joint
hangs from its parent by a ``revolute``/``continuous``/``prismatic`` URDF joint named as in
``/joint_states``; a body without joints by a ``fixed`` one. A link's frame is its body's frame moved to the
joint's anchor (the MJCF ``<joint pos>``; zero in most models), since a URDF joint turns about its child
link's origin. Visual geoms (groups 0-2, MuJoCo's visible ones) become URDF primitives; a capsule becomes a
cylinder and two spheres; a mesh becomes a binary STL written from the compiled model (so it is exactly the
simulated shape) into a :class:`~r2s2r_sim.world.mesh_package.MeshPackage`, named by its content hash, and
the URDF names it by its ``package://`` URI, which a viewer on another machine can resolve.
"""

from __future__ import annotations

import hashlib
import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from transforms3d import euler, quaternions

from r2s2r_sim.world.kinematics import subtree_bodies
from r2s2r_sim.world.mesh_package import MeshPackage

__all__ = ["Joint", "Link", "RobotDescription", "RobotDescriptionError", "write_stl"]

_VISIBLE_GROUPS = 3  # MuJoCo shows geom groups 0, 1 and 2 by default
_HINGE, _SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
_FREE = int(mujoco.mjtJoint.mjJNT_FREE)
Pose = tuple[np.ndarray, np.ndarray]  # position (3,), wxyz quaternion (4,)


class RobotDescriptionError(ValueError):
    """The robot cannot be written as a URDF (e.g. a body with several joints); names the body or joint."""


@dataclass(frozen=True)
class Link:
    """A URDF link: name, MuJoCo body, frame in that body's frame, and whether it carries the body's geoms.

    The end-effector link follows its site's body but carries no geometry of its own.
    """

    name: str
    body: int
    offset: Pose
    geometry: bool = True


@dataclass(frozen=True)
class Joint:
    """A URDF joint between two links; ``qpos_adr`` is -1 for fixed joints."""

    name: str
    type: str
    parent: str
    child: str
    origin: Pose
    axis: np.ndarray
    limit: tuple[float, float] | None
    effort: float
    qpos_adr: int


def _pose_mul(a: Pose, b: Pose) -> Pose:
    return a[0] + quaternions.rotate_vector(b[0], a[1]), quaternions.qmult(a[1], b[1])


def _pose_inv(a: Pose) -> Pose:
    q = quaternions.qinverse(a[1])
    return -quaternions.rotate_vector(a[0], q), q


def _identity() -> Pose:
    return np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])


def _fmt(values: Sequence[float] | np.ndarray) -> str:
    return " ".join(f"{float(v):.9g}" for v in values)


def _rpy(quat: np.ndarray) -> list[float]:
    return list(euler.quat2euler(quat, "sxyz"))


def write_stl(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write a binary STL of ``faces`` (indices into ``vertices``, m); never overwrites another file."""
    tri = vertices[faces].astype(np.float32)
    normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    records = np.zeros(len(tri), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    records["n"], records["v"] = normals, tri
    data = b"r2s2r mesh".ljust(80, b"\0") + np.uint32(len(tri)).tobytes() + records.tobytes()
    if path.exists():
        if path.read_bytes() == data:
            return
        raise RobotDescriptionError(f"{path}: exists with other content; not overwriting it")
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


class RobotDescription:
    """The URDF tree of the robot under ``root`` in ``model``; see the module docstring.

    Args:
        model: the compiled world.
        root: the robot's root body id.
        prefix: name prefix the robot was attached with (removed from link and joint names).
        base_frame: name of the root link (the interface's ``base`` frame).
        ee: ``(frame name, site id)`` of a fixed end-effector link at that site, or ``None``.
        name: the ``<robot name>``.

    Raises:
        RobotDescriptionError: a body with more than one joint, or a ball or non-root free joint.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        root: int,
        *,
        prefix: str,
        base_frame: str,
        ee: tuple[str, int] | None = None,
        name: str = "robot",
    ) -> None:
        self.model = model
        self.name = name
        self._prefix = prefix
        self.root = root
        bodies = subtree_bodies(model, root)
        self.links: list[Link] = []
        self.joints: list[Joint] = []
        self._link_of: dict[int, Link] = {}
        for body in bodies:
            link = Link(
                name=base_frame if body == root else self._strip(model.body(body).name),
                body=body,
                offset=self._anchor(body),
            )
            self.links.append(link)
            self._link_of[body] = link
            if body != root:
                self.joints.append(self._joint(body, link))
        if ee is not None:
            frame, site = ee
            body = int(model.site_bodyid[site])
            if body not in self._link_of:
                raise RobotDescriptionError(f"ee site {model.site(site).name!r} is not on the robot")
            parent = self._link_of[body]
            site_pose = (model.site_pos[site].copy(), model.site_quat[site].copy())
            link = Link(name=frame, body=body, offset=site_pose, geometry=False)
            self.links.append(link)
            origin = _pose_mul(_pose_inv(parent.offset), site_pose)
            self.joints.append(
                Joint(
                    name=f"{parent.name}_to_{frame}",
                    type="fixed",
                    parent=parent.name,
                    child=frame,
                    origin=origin,
                    axis=np.zeros(3),
                    limit=None,
                    effort=0.0,
                    qpos_adr=-1,
                )
            )
        names = [link.name for link in self.links]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise RobotDescriptionError(f"robot links would share the names {dup}")

    def _strip(self, name: str) -> str:
        return name[len(self._prefix) :] if self._prefix and name.startswith(self._prefix) else name

    def _moving_joint(self, body: int) -> int:
        """The body's one hinge or slide joint (-1 if none); a free joint on the root is ignored."""
        m = self.model
        count, first = int(m.body_jntnum[body]), int(m.body_jntadr[body])
        if count == 0 or (body == self.root and count == 1 and int(m.jnt_type[first]) == _FREE):
            return -1
        if count > 1:
            raise RobotDescriptionError(f"body {m.body(body).name!r} has {count} joints; URDF allows one")
        if int(m.jnt_type[first]) not in (_HINGE, _SLIDE):
            raise RobotDescriptionError(
                f"joint {m.joint(first).name!r}: only hinge and slide joints map to URDF joints"
            )
        return first

    def _anchor(self, body: int) -> Pose:
        joint = self._moving_joint(body)
        pos = self.model.jnt_pos[joint].copy() if joint >= 0 else np.zeros(3)
        return pos, np.array([1.0, 0.0, 0.0, 0.0])

    def _joint(self, body: int, link: Link) -> Joint:
        m = self.model
        parent = self._link_of[int(m.body_parentid[body])]
        # Child link frame at q = 0: parent body * body offset * anchor, undoing the MJCF ref (qpos0).
        rel = (m.body_pos[body].copy(), m.body_quat[body].copy())
        origin = _pose_mul(_pose_inv(parent.offset), _pose_mul(rel, link.offset))
        joint = self._moving_joint(body)
        if joint < 0:
            return Joint(
                name=f"{parent.name}_to_{link.name}",
                type="fixed",
                parent=parent.name,
                child=link.name,
                origin=origin,
                axis=np.zeros(3),
                limit=None,
                effort=0.0,
                qpos_adr=-1,
            )
        axis = m.jnt_axis[joint].copy()
        ref = float(m.qpos0[m.jnt_qposadr[joint]])
        if int(m.jnt_type[joint]) == _HINGE:
            kind = "revolute" if m.jnt_limited[joint] else "continuous"
            origin = _pose_mul(origin, (np.zeros(3), quaternions.axangle2quat(axis, -ref)))
        else:
            kind = "prismatic"
            origin = _pose_mul(origin, (-ref * axis, np.array([1.0, 0.0, 0.0, 0.0])))
        limit = (float(m.jnt_range[joint][0]), float(m.jnt_range[joint][1])) if m.jnt_limited[joint] else None
        if kind == "prismatic" and limit is None:
            limit = (-math.inf, math.inf)
        effort = float(max(abs(m.jnt_actfrcrange[joint][0]), abs(m.jnt_actfrcrange[joint][1])))
        if not m.jnt_actfrclimited[joint]:
            acts = [
                a for a in range(m.nu) if int(m.actuator_trnid[a][0]) == joint and m.actuator_forcelimited[a]
            ]
            effort = max((float(np.abs(m.actuator_forcerange[a]).max()) for a in acts), default=0.0)
        return Joint(
            name=self._strip(m.joint(joint).name),
            type=kind,
            parent=parent.name,
            child=link.name,
            origin=origin,
            axis=axis,
            limit=limit,
            effort=effort,
            qpos_adr=int(m.jnt_qposadr[joint]),
        )

    # --------------------------------------------------------------------------------------- poses

    def link_poses(self, data: mujoco.MjData) -> dict[str, Pose]:
        """World pose of every link frame from ``data``'s kinematics (``mj_kinematics`` must have run)."""
        poses = {}
        for link in self.links:
            body = (data.xpos[link.body].copy(), data.xquat[link.body].copy())
            poses[link.name] = _pose_mul(body, link.offset)
        return poses

    def root_pose(self, data: mujoco.MjData) -> Pose:
        """World pose of the root link."""
        return self.link_poses(data)[self.links[0].name]

    def joint_poses(
        self, qpos: np.ndarray | None, *, fixed: bool
    ) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
        """``(parent, child, pos, wxyz)`` of each fixed joint (``fixed``), or each moving joint at ``qpos``.

        This is robot_state_publisher's computation: the joint origin, then the motion about (revolute,
        continuous) or along (prismatic) the axis by the joint's position.
        """
        out = []
        for joint in self.joints:
            if (joint.type == "fixed") != fixed:
                continue
            pos, quat = joint.origin
            if not fixed:
                assert qpos is not None
                q = float(qpos[joint.qpos_adr])
                motion: Pose = (
                    (joint.axis * q, np.array([1.0, 0.0, 0.0, 0.0]))
                    if joint.type == "prismatic"
                    else (np.zeros(3), quaternions.axangle2quat(joint.axis, q))
                )
                pos, quat = _pose_mul((pos, quat), motion)
            out.append((joint.parent, joint.child, pos, quat / np.linalg.norm(quat)))
        return out

    # ---------------------------------------------------------------------------------------- URDF

    def urdf(self, meshes: MeshPackage | None = None) -> str:
        """The URDF text; meshes go to the ``meshes`` package as STL (omitted when it is ``None``)."""
        robot = ET.Element("robot", name=self.name)
        materials: dict[tuple[float, ...], str] = {}
        for link in self.links:
            element = ET.SubElement(robot, "link", name=link.name)
            if link.geometry:
                self._visuals(element, link, meshes, materials)
        for joint in self.joints:
            element = ET.SubElement(robot, "joint", name=joint.name, type=joint.type)
            ET.SubElement(element, "parent", link=joint.parent)
            ET.SubElement(element, "child", link=joint.child)
            ET.SubElement(element, "origin", xyz=_fmt(joint.origin[0]), rpy=_fmt(_rpy(joint.origin[1])))
            if joint.type != "fixed":
                ET.SubElement(element, "axis", xyz=_fmt(joint.axis))
            if joint.limit is not None:
                low, high = joint.limit
                ET.SubElement(
                    element,
                    "limit",
                    lower=f"{low:.9g}",
                    upper=f"{high:.9g}",
                    effort=f"{joint.effort:.9g}",
                    velocity="0",
                )
        for rgba, name in materials.items():
            material = ET.Element("material", name=name)
            ET.SubElement(material, "color", rgba=_fmt(rgba))
            robot.insert(0, material)
        ET.indent(robot)
        return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"

    def _visuals(
        self,
        element: ET.Element,
        link: Link,
        meshes: MeshPackage | None,
        materials: dict[tuple[float, ...], str],
    ) -> None:
        m = self.model
        to_link = _pose_inv(link.offset)
        for geom in range(m.ngeom):
            if int(m.geom_bodyid[geom]) != link.body or int(m.geom_group[geom]) >= _VISIBLE_GROUPS:
                continue
            pose = _pose_mul(to_link, (m.geom_pos[geom].copy(), m.geom_quat[geom].copy()))
            rgba = tuple(round(float(v), 4) for v in self._rgba(geom))
            for sub_pose, shape in self._shapes(geom, meshes):
                visual = ET.SubElement(element, "visual")
                full = _pose_mul(pose, sub_pose)
                ET.SubElement(visual, "origin", xyz=_fmt(full[0]), rpy=_fmt(_rpy(full[1])))
                geometry = ET.SubElement(visual, "geometry")
                geometry.append(shape)
                name = materials.setdefault(rgba, f"rgba_{len(materials)}")
                ET.SubElement(visual, "material", name=name)

    def _rgba(self, geom: int) -> np.ndarray:
        m = self.model
        mat = int(m.geom_matid[geom])
        return m.mat_rgba[mat] if mat >= 0 else m.geom_rgba[geom]

    def _shapes(self, geom: int, meshes: MeshPackage | None) -> list[tuple[Pose, ET.Element]]:
        m = self.model
        kind, size = int(m.geom_type[geom]), m.geom_size[geom]
        here = _identity()
        if kind == int(mujoco.mjtGeom.mjGEOM_BOX):
            return [(here, ET.Element("box", size=_fmt(2 * size)))]
        if kind == int(mujoco.mjtGeom.mjGEOM_SPHERE):
            return [(here, ET.Element("sphere", radius=f"{size[0]:.9g}"))]
        if kind == int(mujoco.mjtGeom.mjGEOM_ELLIPSOID):
            return [(here, ET.Element("sphere", radius=f"{float(max(size)):.9g}"))]
        if kind in (int(mujoco.mjtGeom.mjGEOM_CYLINDER), int(mujoco.mjtGeom.mjGEOM_CAPSULE)):
            shapes = [(here, ET.Element("cylinder", radius=f"{size[0]:.9g}", length=f"{2 * size[1]:.9g}"))]
            if kind == int(mujoco.mjtGeom.mjGEOM_CAPSULE):
                for sign in (1.0, -1.0):
                    cap = (np.array([0.0, 0.0, sign * size[1]]), np.array([1.0, 0.0, 0.0, 0.0]))
                    shapes.append((cap, ET.Element("sphere", radius=f"{size[0]:.9g}")))
            return shapes
        if kind == int(mujoco.mjtGeom.mjGEOM_MESH) and meshes is not None:
            mesh = int(m.geom_dataid[geom])
            start, count = int(m.mesh_vertadr[mesh]), int(m.mesh_vertnum[mesh])
            fstart, fcount = int(m.mesh_faceadr[mesh]), int(m.mesh_facenum[mesh])
            verts = m.mesh_vert[start : start + count].astype(np.float64)
            faces = m.mesh_face[fstart : fstart + fcount]
            digest = hashlib.sha256(verts.tobytes() + faces.tobytes()).hexdigest()[:16]
            meshes.create()
            write_stl(meshes.folder / f"{digest}.stl", verts, faces)
            return [(here, ET.Element("mesh", filename=meshes.uri(f"{digest}.stl")))]
        return []  # planes, height fields, SDFs, or meshes without a package: nothing RViz could draw here
