"""A world's compiled MuJoCo model rebuilt in one Bullet client: the robot from its URDF, the rest as bodies.

The model is the profiled one (``EmulatedArm``'s spec editor has written the profile's masses, frictions,
sizes, poses and servo gains into it), so the Bullet scene carries the profile's values without reading the
profile again.  The robot is loaded from the URDF the product publishes on ``/robot_description``
(:class:`~r2s2r_sim.world.robot_description.RobotDescription`), completed here with what a simulator needs
and a viewer does not: each link's inertial (the model's mass and principal inertia) and its collision
shapes (the geoms that collide in the model).  Every other body hangs from the world: a body with a free
joint becomes a dynamic Bullet body, a body without joints a static one, and a childless body with one
slide or hinge on such a fixed body (a drawer in its cabinet) a jointed link of it; any other articulated
scene body is refused by name.  A mocap body (a capture's board) is a fixed one placed where MuJoCo's mocap
pose puts it at each render, and a plane with a 2D texture is drawn textured
(:mod:`~r2s2r_sim.hardware.bullet_unit.textures`).

A state crosses between the engines as MuJoCo ``qpos``/``qvel``: :meth:`BulletScene.set_state` poses Bullet
from them (a reset, or a render of a snapshot) and :meth:`BulletScene.read_state` writes Bullet's state
back, so the task's judge, the joint states and the renders all read the one ``qpos`` layout.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pybullet
from transforms3d import euler, quaternions

from r2s2r_sim.hardware.bullet_unit.textures import textured_quad
from r2s2r_sim.hardware.profile import HardwareProfileError
from r2s2r_sim.world.robot_description import RobotDescription, write_stl
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["BulletScene", "FreeBody", "RobotJoint"]

_FREE = int(mujoco.mjtJoint.mjJNT_FREE)
_HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
_SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)
_LINK_KEYS = (
    "linkMasses",
    "linkCollisionShapeIndices",
    "linkVisualShapeIndices",
    "linkPositions",
    "linkOrientations",
    "linkInertialFramePositions",
    "linkInertialFrameOrientations",
    "linkParentIndices",
    "linkJointTypes",
    "linkJointAxis",
)
_VISIBLE_GROUPS = 3  # MuJoCo shows geom groups 0-2 by default; the URDF's visuals are those too
_G = mujoco.mjtGeom
Pose = tuple[np.ndarray, np.ndarray]  # position (3,), wxyz quaternion (4,)


def _mul(a: Pose, b: Pose) -> Pose:
    return a[0] + quaternions.rotate_vector(b[0], a[1]), quaternions.qmult(a[1], b[1])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` of two 3-vectors (``np.cross`` costs tens of microseconds a call in the step loop)."""
    return np.array((a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]))


def _inv(a: Pose) -> Pose:
    q = quaternions.qinverse(a[1])
    return -quaternions.rotate_vector(a[0], q), q


def xyzw(wxyz: np.ndarray) -> list[float]:
    """A wxyz quaternion as Bullet's xyzw list."""
    return [float(wxyz[1]), float(wxyz[2]), float(wxyz[3]), float(wxyz[0])]


def wxyz(q: tuple[float, ...] | list[float]) -> np.ndarray:
    """Bullet's xyzw quaternion as wxyz."""
    return np.array([q[3], q[0], q[1], q[2]], dtype=np.float64)


def _fmt(values: np.ndarray | list[float]) -> str:
    return " ".join(f"{float(v):.9g}" for v in values)


@dataclass(frozen=True)
class RobotJoint:
    """A moving robot joint: its Bullet index and its MuJoCo ``qpos``/``qvel`` addresses."""

    name: str
    index: int
    qadr: int
    dadr: int


@dataclass(frozen=True)
class FreeBody:
    """A free scene body: its Bullet id, MuJoCo addresses and body-to-centre-of-mass offset (body frame)."""

    name: str
    uid: int
    qadr: int
    dadr: int
    com: Pose
    com_inverse: Pose


class BulletScene:
    """The model's bodies in the Bullet client ``client`` (see the module docstring).

    Raises:
        HardwareProfileError: a scene body is articulated beyond one link, or a geom type Bullet lacks here.
    """

    def __init__(self, client: int, world: SimWorld, *, collisions: bool = True) -> None:
        """Build the scene in ``client`` from ``world``'s compiled model in its current (forwarded) state.

        ``collisions``: build collision shapes and masses (physics); False builds visuals only (a renderer).
        """
        self.client = client
        self.model = model = world.model
        self.world_id = world.world_id
        self._collisions = collisions
        self._tmp = tempfile.TemporaryDirectory(prefix="r2s2r_bullet_")
        robot = world.robot_body_ids
        root = next(b for b in sorted(robot) if int(model.body_parentid[b]) not in robot)
        self.robot_uid, self.joints = self._load_robot(world, root)
        self._indices = [j.index for j in self.joints]
        self.free_bodies: list[FreeBody] = []
        self.static_uids: list[int] = []
        self.mocap_bodies: list[tuple[int, int]] = []  # Bullet body, MuJoCo mocap index
        # Scene joints (a drawer's slide): Bullet body, link index, MuJoCo addresses and reference position.
        self.scene_joints: list[tuple[int, int, int, int, float]] = []
        for body in range(model.nbody):
            if body not in robot and not self._is_link(body):
                self._add_scene_body(world, body)

    def close(self) -> None:
        """Remove the written URDF and meshes."""
        self._tmp.cleanup()

    # ------------------------------------------------------------------------------------------- robot

    def _load_robot(self, world: SimWorld, root: int) -> tuple[int, list[RobotJoint]]:
        model, prefix = self.model, world.config.robot.prefix
        desc = RobotDescription(model, root, prefix=prefix, base_frame="base_link", name=world.world_id)
        tree = ET.fromstring(desc.urdf())
        links = {link.name: link for link in desc.links}
        for element in tree.iter("link"):
            link = links[element.get("name", "")]
            if not link.geometry:
                continue
            to_link = _inv(link.offset)
            self._inertial(element, link.body, to_link)  # the renderer's copy too: Bullet warns without one
            for geom in range(model.ngeom):
                if int(model.geom_bodyid[geom]) != link.body:
                    continue
                pose = _mul(to_link, (model.geom_pos[geom].copy(), model.geom_quat[geom].copy()))
                if self._collisions and (model.geom_contype[geom] or model.geom_conaffinity[geom]):
                    self._urdf_shape(element, "collision", geom, pose)
                if int(model.geom_type[geom]) == _G.mjGEOM_MESH and model.geom_group[geom] < _VISIBLE_GROUPS:
                    self._urdf_shape(element, "visual", geom, pose)  # the URDF omits meshes without a package
        path = Path(self._tmp.name) / "robot.urdf"
        path.write_text(ET.tostring(tree, encoding="unicode"))
        base = (world.data.xpos[root].copy(), world.data.xquat[root].copy())
        flags = pybullet.URDF_USE_INERTIA_FROM_FILE
        uid = pybullet.loadURDF(
            str(path),
            basePosition=base[0].tolist(),
            baseOrientation=xyzw(base[1]),
            useFixedBase=True,
            flags=flags,
            physicsClientId=self.client,
        )
        joints = []
        for index in range(pybullet.getNumJoints(uid, physicsClientId=self.client)):
            info = pybullet.getJointInfo(uid, index, physicsClientId=self.client)
            if info[2] == pybullet.JOINT_FIXED:
                continue
            name = info[1].decode()
            jid = next(
                i
                for i in (
                    mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in (name, prefix + name)
                )
                if i >= 0
            )
            joints.append(RobotJoint(name, index, int(model.jnt_qposadr[jid]), int(model.jnt_dofadr[jid])))
        if self._collisions:
            self._copy_dynamics(
                uid, {name: link.body for name, link in links.items() if link.geometry}, joints
            )
        return uid, joints

    def _inertial(self, element: ET.Element, body: int, to_link: Pose) -> None:
        """The body's mass and inertia, with its joint's armature added.

        Bullet's multibodies have no rotor inertia; a servo's reflected rotor inertia (MuJoCo's armature)
        is what keeps a light wrist link driveable, so the link it turns carries it, about every axis (a
        rigid body's principal moments must satisfy the triangle inequality, so inertia about the joint
        axis alone cannot be added): exact about the joint, and that much more about the others.  A slide
        joint's armature has no counterpart (a link's mass would load gravity too) and is dropped.
        """
        m = self.model
        rot = quaternions.quat2mat(m.body_iquat[body])
        inertia = rot @ np.diag(m.body_inertia[body]) @ rot.T  # about the centre of mass, body axes
        mass = float(m.body_mass[body])
        if int(m.body_jntnum[body]) == 1 and int(m.jnt_type[m.body_jntadr[body]]) == _HINGE:
            inertia = inertia + float(m.dof_armature[m.jnt_dofadr[m.body_jntadr[body]]]) * np.eye(3)
        values, vectors = np.linalg.eigh(inertia)
        if np.linalg.det(vectors) < 0:
            vectors[:, 0] = -vectors[:, 0]
        pose = _mul(to_link, (m.body_ipos[body].copy(), quaternions.mat2quat(vectors)))
        inertial = ET.SubElement(element, "inertial")
        rpy = euler.quat2euler(pose[1], "sxyz")
        ET.SubElement(inertial, "origin", xyz=_fmt(pose[0]), rpy=_fmt(list(rpy)))
        ET.SubElement(inertial, "mass", value=f"{mass:.9g}")
        ixx, iyy, izz = (max(float(v), 1e-9) for v in values)
        ET.SubElement(
            inertial,
            "inertia",
            ixx=f"{ixx:.9g}",
            iyy=f"{iyy:.9g}",
            izz=f"{izz:.9g}",
            ixy="0",
            ixz="0",
            iyz="0",
        )

    def _urdf_shape(self, element: ET.Element, kind: str, geom: int, pose: Pose) -> None:
        m = self.model
        size = m.geom_size[geom]
        gtype = int(m.geom_type[geom])
        if gtype == _G.mjGEOM_BOX:
            shape = ET.Element("box", size=_fmt(2 * size))
        elif gtype == _G.mjGEOM_SPHERE:
            shape = ET.Element("sphere", radius=f"{size[0]:.9g}")
        elif gtype in (_G.mjGEOM_CYLINDER, _G.mjGEOM_CAPSULE):
            tag = "cylinder" if gtype == _G.mjGEOM_CYLINDER else "capsule"
            shape = ET.Element(tag, radius=f"{size[0]:.9g}", length=f"{2 * size[1]:.9g}")
        elif gtype == _G.mjGEOM_MESH:
            shape = ET.Element("mesh", filename=str(self._mesh_file(geom)))
        else:
            raise HardwareProfileError(
                f"engine pybullet: robot geom {m.geom(geom).name!r} of type {_G(gtype).name} has no Bullet "
                "shape"
            )
        part = ET.SubElement(element, kind)
        rpy = euler.quat2euler(pose[1], "sxyz")
        ET.SubElement(part, "origin", xyz=_fmt(pose[0]), rpy=_fmt(list(rpy)))
        ET.SubElement(part, "geometry").append(shape)

    def _mesh_file(self, geom: int) -> Path:
        m = self.model
        mesh = int(m.geom_dataid[geom])
        start, count = int(m.mesh_vertadr[mesh]), int(m.mesh_vertnum[mesh])
        fstart, fcount = int(m.mesh_faceadr[mesh]), int(m.mesh_facenum[mesh])
        path = Path(self._tmp.name) / f"mesh_{mesh}.stl"
        if not path.exists():
            write_stl(
                path,
                m.mesh_vert[start : start + count].astype(np.float64),
                m.mesh_face[fstart : fstart + fcount],
            )
        return path

    def _copy_dynamics(self, uid: int, bodies: dict[str, int], joints: list[RobotJoint]) -> None:
        """Friction of each link's first colliding geom, and each joint's damping (Bullet's joint damping)."""
        m, c = self.model, self.client
        for index in range(-1, pybullet.getNumJoints(uid, physicsClientId=c)):
            name = (
                pybullet.getBodyInfo(uid, physicsClientId=c)[0].decode()
                if index < 0
                else pybullet.getJointInfo(uid, index, physicsClientId=c)[12].decode()
            )
            if name in bodies:
                self._set_friction(uid, index, bodies[name])
        for joint in joints:
            pybullet.changeDynamics(
                uid, joint.index, jointDamping=float(m.dof_damping[joint.dadr]), physicsClientId=c
            )

    def _set_friction(self, uid: int, link: int, body: int) -> None:
        m = self.model
        geoms = [
            g
            for g in range(m.ngeom)
            if m.geom_bodyid[g] == body and (m.geom_contype[g] or m.geom_conaffinity[g])
        ]
        if not geoms:
            return
        slide, spin, roll = (float(v) for v in m.geom_friction[geoms[0]])
        pybullet.changeDynamics(
            uid,
            link,
            lateralFriction=slide,
            spinningFriction=spin,
            rollingFriction=roll,
            physicsClientId=self.client,
        )

    # --------------------------------------------------------------------------------------- the scene

    def _add_scene_body(self, world: SimWorld, body: int) -> None:
        m, d = self.model, world.data
        name = m.body(body).name or "world"
        njnt = int(m.body_jntnum[body])
        free = njnt == 1 and int(m.jnt_type[m.body_jntadr[body]]) == _FREE
        if njnt and not free:
            raise HardwareProfileError(
                f"engine pybullet: world {self.world_id!r}: scene body {name!r} has a hinge or slide joint "
                "that is not a single link of a fixed body; the Bullet unit builds free and fixed scene "
                "bodies, and single jointed links of fixed ones"
            )
        parent = int(m.body_parentid[body])
        while parent > 0:  # a body welded to a moving one would have to move with it
            if int(m.body_jntnum[parent]):
                raise HardwareProfileError(
                    f"engine pybullet: world {self.world_id!r}: scene body {name!r} hangs from the moving "
                    f"body {m.body(parent).name!r}; the Bullet unit builds free and fixed scene bodies only"
                )
            parent = int(m.body_parentid[parent])
        geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] == body]
        visual = [g for g in geoms if m.geom_group[g] < _VISIBLE_GROUPS]
        colliding = (
            [g for g in geoms if m.geom_contype[g] or m.geom_conaffinity[g]] if self._collisions else []
        )
        if not visual and not colliding:
            return
        col = self._shape_array(colliding, collision=True) if colliding else -1
        quad = textured_quad(m, visual[0], Path(self._tmp.name)) if len(visual) == 1 else None
        if quad is not None:
            vis = pybullet.createVisualShape(
                pybullet.GEOM_MESH, fileName=str(quad.mesh), rgbaColor=[1.0, 1.0, 1.0, 1.0],
                visualFramePosition=m.geom_pos[visual[0]].tolist(),
                visualFrameOrientation=xyzw(m.geom_quat[visual[0]]), physicsClientId=self.client,
            )  # fmt: skip
        else:
            vis = self._shape_array(visual, collision=False) if visual else -1
        pose = (d.xpos[body].copy(), d.xquat[body].copy())
        com: Pose = (m.body_ipos[body].copy(), m.body_iquat[body].copy())
        mass = float(m.body_mass[body]) if free and self._collisions else 0.0
        links = (
            [] if free else [k for k in range(1, m.nbody) if self._is_link(k) and m.body_parentid[k] == body]
        )
        if not free:
            com = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))  # a fixed body's frame is its own
        uid = pybullet.createMultiBody(
            baseMass=mass,
            baseCollisionShapeIndex=col,
            baseVisualShapeIndex=vis,
            basePosition=pose[0].tolist(),
            baseOrientation=xyzw(pose[1]),
            baseInertialFramePosition=com[0].tolist(),
            baseInertialFrameOrientation=xyzw(com[1]),
            physicsClientId=self.client,
            **self._link_arguments(links),
        )
        for index, link in enumerate(links):
            self._add_scene_joint(uid, index, link)
        if quad is not None:
            tex = pybullet.loadTexture(str(quad.image), physicsClientId=self.client)
            pybullet.changeVisualShape(uid, -1, textureUniqueId=tex, physicsClientId=self.client)
        if int(m.body_mocapid[body]) >= 0:
            self.mocap_bodies.append((uid, int(m.body_mocapid[body])))
        if self._collisions:
            self._set_friction(uid, -1, body)
            if free:
                inertia = [max(float(v), 1e-9) for v in m.body_inertia[body]]
                pybullet.changeDynamics(uid, -1, localInertiaDiagonal=inertia, physicsClientId=self.client)
        if free:
            jnt = int(m.body_jntadr[body])
            self.free_bodies.append(
                FreeBody(name, uid, int(m.jnt_qposadr[jnt]), int(m.jnt_dofadr[jnt]), com, _inv(com))
            )
        else:
            self.static_uids.append(uid)

    def _is_link(self, body: int) -> bool:
        """A childless body with one slide (or origin-anchored hinge) joint on a fixed top-level body."""
        m = self.model
        parent = int(m.body_parentid[body])
        if body == 0 or parent == 0 or int(m.body_jntnum[body]) != 1 or int(m.body_jntnum[parent]) != 0:
            return False
        jnt = int(m.body_jntadr[body])
        kind = int(m.jnt_type[jnt])
        childless = not any(int(m.body_parentid[k]) == body for k in range(body + 1, m.nbody))
        moving = kind == _SLIDE or (kind == _HINGE and not np.any(m.jnt_pos[jnt]))
        return moving and childless and int(m.body_parentid[parent]) == 0

    def _link_arguments(self, links: list[int]) -> dict[str, list[Any]]:
        """``createMultiBody``'s link arguments for ``links`` (jointed children of the base)."""
        if not links:
            return {}
        m = self.model
        out: dict[str, list[Any]] = {k: [] for k in _LINK_KEYS}
        for link in links:
            geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] == link]
            colliding = (
                [g for g in geoms if m.geom_contype[g] or m.geom_conaffinity[g]] if self._collisions else []
            )
            visual = [g for g in geoms if m.geom_group[g] < _VISIBLE_GROUPS]
            jnt = int(m.body_jntadr[link])
            out["linkMasses"].append(float(m.body_mass[link]) if self._collisions else 0.0)
            out["linkCollisionShapeIndices"].append(
                self._shape_array(colliding, collision=True) if colliding else -1
            )
            out["linkVisualShapeIndices"].append(self._shape_array(visual, collision=False) if visual else -1)
            out["linkPositions"].append(m.body_pos[link].tolist())
            out["linkOrientations"].append(xyzw(m.body_quat[link]))
            out["linkInertialFramePositions"].append(m.body_ipos[link].tolist())
            out["linkInertialFrameOrientations"].append(xyzw(m.body_iquat[link]))
            out["linkParentIndices"].append(0)
            kind = pybullet.JOINT_PRISMATIC if int(m.jnt_type[jnt]) == _SLIDE else pybullet.JOINT_REVOLUTE
            out["linkJointTypes"].append(kind)
            out["linkJointAxis"].append(m.jnt_axis[jnt].tolist())
        return out

    def _add_scene_joint(self, uid: int, index: int, body: int) -> None:
        """Record a scene link's joint; give it the model's range, damping, friction loss and link inertia."""
        m, c = self.model, self.client
        jnt = int(m.body_jntadr[body])
        qadr, dadr = int(m.jnt_qposadr[jnt]), int(m.jnt_dofadr[jnt])
        ref = float(m.qpos0[qadr])
        self.scene_joints.append((uid, index, qadr, dadr, ref))
        if not self._collisions:
            return
        extra: dict[str, float] = {}
        if m.jnt_limited[jnt]:
            extra = {
                "jointLowerLimit": float(m.jnt_range[jnt][0]) - ref,
                "jointUpperLimit": float(m.jnt_range[jnt][1]) - ref,
            }
        inertia = [max(float(v), 1e-9) for v in m.body_inertia[body]]
        pybullet.changeDynamics(
            uid,
            index,
            jointDamping=float(m.dof_damping[dadr]),
            localInertiaDiagonal=inertia,
            physicsClientId=c,
            **extra,
        )
        self._set_friction(uid, index, body)
        pybullet.setJointMotorControl2(
            uid, index, pybullet.VELOCITY_CONTROL, targetVelocity=0.0, force=float(m.dof_frictionloss[dadr]),
            physicsClientId=c,
        )  # fmt: skip

    def _shape_array(self, geoms: list[int], *, collision: bool) -> int:
        """One compound Bullet shape of ``geoms`` in their body's frame."""
        m, c = self.model, self.client
        kinds, extents, radii, lengths, planes, positions, orientations, colours, files = (
            [], [], [], [], [], [], [], [], []
        )  # fmt: skip
        for geom in geoms:
            gtype, size = int(m.geom_type[geom]), m.geom_size[geom]
            extent, radius, length, normal, filename = [1.0, 1.0, 1.0], 0.5, 1.0, [0.0, 0.0, 1.0], ""
            pos, quat = m.geom_pos[geom].copy(), m.geom_quat[geom].copy()
            if gtype == _G.mjGEOM_PLANE and collision:
                kind = pybullet.GEOM_PLANE
            elif gtype == _G.mjGEOM_PLANE:  # the tiny renderer draws a plane as a thin box
                kind, extent = pybullet.GEOM_BOX, [float(size[0]), float(size[1]), 0.001]
                pos = pos - quaternions.rotate_vector([0.0, 0.0, 0.001], quat)
            elif gtype == _G.mjGEOM_BOX:
                kind, extent = pybullet.GEOM_BOX, [float(v) for v in size]
            elif gtype == _G.mjGEOM_SPHERE:
                kind, radius = pybullet.GEOM_SPHERE, float(size[0])
            elif gtype in (_G.mjGEOM_CYLINDER, _G.mjGEOM_CAPSULE):
                kind = pybullet.GEOM_CYLINDER if gtype == _G.mjGEOM_CYLINDER else pybullet.GEOM_CAPSULE
                radius, length = float(size[0]), 2 * float(size[1])
            elif gtype == _G.mjGEOM_MESH:
                kind, filename = pybullet.GEOM_MESH, str(self._mesh_file(geom))
            else:
                raise HardwareProfileError(
                    f"engine pybullet: world {self.world_id!r}: geom {m.geom(geom).name!r} of type "
                    f"{_G(gtype).name} has no Bullet shape"
                )
            kinds.append(kind)
            extents.append(extent)
            radii.append(radius)
            lengths.append(length)
            planes.append(normal)
            files.append(filename)
            positions.append(pos.tolist())
            orientations.append(xyzw(quat))
            mat = int(m.geom_matid[geom])
            colours.append([float(v) for v in (m.mat_rgba[mat] if mat >= 0 else m.geom_rgba[geom])])
        common = dict(
            shapeTypes=kinds,
            radii=radii,
            halfExtents=extents,
            lengths=lengths,
            fileNames=files,
            meshScales=[[1.0, 1.0, 1.0]] * len(geoms),
            planeNormals=planes,
            physicsClientId=c,
        )
        if collision:
            return int(
                pybullet.createCollisionShapeArray(
                    collisionFramePositions=positions, collisionFrameOrientations=orientations, **common
                )
            )
        return int(
            pybullet.createVisualShapeArray(
                rgbaColors=colours,
                visualFramePositions=positions,
                visualFrameOrientations=orientations,
                **common,
            )
        )

    # ------------------------------------------------------------------------------------------- state

    def set_state(self, qpos: np.ndarray, qvel: np.ndarray | None = None) -> None:
        """Pose every robot joint and free body from MuJoCo ``qpos`` (and ``qvel``; at rest when None)."""
        c = self.client
        for j in self.joints:
            vel = 0.0 if qvel is None else float(qvel[j.dadr])
            pybullet.resetJointState(self.robot_uid, j.index, float(qpos[j.qadr]), vel, physicsClientId=c)
        for uid, index, qadr, dadr, ref in self.scene_joints:
            vel = 0.0 if qvel is None else float(qvel[dadr])
            pybullet.resetJointState(uid, index, float(qpos[qadr]) - ref, vel, physicsClientId=c)
        for b in self.free_bodies:
            frame = (qpos[b.qadr : b.qadr + 3].copy(), qpos[b.qadr + 3 : b.qadr + 7].copy())
            com = _mul(frame, b.com)
            pybullet.resetBasePositionAndOrientation(b.uid, com[0].tolist(), xyzw(com[1]), physicsClientId=c)
            if qvel is None:
                lin, ang = [0.0] * 3, [0.0] * 3
            else:
                # MuJoCo's free joint: the body frame's linear velocity in the world, angular in the body.
                w_world = quaternions.rotate_vector(qvel[b.dadr + 3 : b.dadr + 6], frame[1])
                v_com = qvel[b.dadr : b.dadr + 3] + np.cross(w_world, com[0] - frame[0])
                lin, ang = v_com.tolist(), w_world.tolist()
            pybullet.resetBaseVelocity(b.uid, lin, ang, physicsClientId=c)

    def set_mocap(self, mocap_pos: np.ndarray, mocap_quat: np.ndarray) -> None:
        """Place the mocap bodies (a capture's board) where MuJoCo's ``mocap_pos``/``mocap_quat`` put them."""
        for uid, i in self.mocap_bodies:
            pybullet.resetBasePositionAndOrientation(
                uid, mocap_pos[i].tolist(), xyzw(mocap_quat[i]), physicsClientId=self.client
            )

    def read_robot(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Write Bullet's robot joints into MuJoCo ``qpos`` and ``qvel`` (in place): the servos' input."""
        states = pybullet.getJointStates(self.robot_uid, self._indices, physicsClientId=self.client)
        for j, state in zip(self.joints, states, strict=True):
            qpos[j.qadr], qvel[j.dadr] = state[0], state[1]

    def read_state(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Write Bullet's joint and free-body state into MuJoCo ``qpos`` and ``qvel`` (in place).

        Called after every run of physics steps, so the pose algebra is MuJoCo's (``mju_*``), not numpy's.
        """
        c = self.client
        self.read_robot(qpos, qvel)
        for uid, index, qadr, dadr, ref in self.scene_joints:
            state = pybullet.getJointState(uid, index, physicsClientId=c)
            qpos[qadr], qvel[dadr] = state[0] + ref, state[1]
        quat, inverse, offset, w_world, w_body = (
            np.empty(4),
            np.empty(4),
            np.empty(3),
            np.empty(3),
            np.empty(3),
        )
        for b in self.free_bodies:
            pos, orn = pybullet.getBasePositionAndOrientation(b.uid, physicsClientId=c)
            lin, ang = pybullet.getBaseVelocity(b.uid, physicsClientId=c)
            com_quat = np.array((orn[3], orn[0], orn[1], orn[2]))
            mujoco.mju_mulQuat(quat, com_quat, b.com_inverse[1])  # the body frame: centre of mass * com^-1
            mujoco.mju_normalize4(quat)
            mujoco.mju_rotVecQuat(offset, b.com[0], quat)  # centre of mass from the body origin, world axes
            w_world[:] = ang
            qpos[b.qadr : b.qadr + 3] = np.asarray(pos) - offset
            qpos[b.qadr + 3 : b.qadr + 7] = quat
            # The body origin's velocity: the centre of mass's less w x offset.
            qvel[b.dadr : b.dadr + 3] = np.asarray(lin) - _cross(w_world, offset)
            mujoco.mju_negQuat(inverse, quat)
            mujoco.mju_rotVecQuat(w_body, w_world, inverse)
            qvel[b.dadr + 3 : b.dadr + 6] = w_body
