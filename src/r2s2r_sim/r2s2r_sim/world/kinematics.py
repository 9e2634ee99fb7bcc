"""A kinematic copy of the arm for inverse kinematics: its own MjModel/MjData, never the simulator's state.

The reference policies plan with it, and `r2s2r world new` uses it to place the scene where they reach.
"""

from __future__ import annotations

import mujoco
import numpy as np

__all__ = [
    "KinematicArm",
    "base_footprint",
    "mat_to_quat",
    "summed_reach",
    "subtree_bodies",
    "tool_down_rotation",
]


def mat_to_quat(mat: np.ndarray) -> np.ndarray:
    """The wxyz quaternion of a 3x3 rotation matrix, as MuJoCo writes ``xquat`` (``mju_mat2Quat``)."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(mat, dtype=np.float64).reshape(9))
    return quat


def tool_down_rotation(yaw: float) -> np.ndarray:
    """Tool orientation (3x3, world) with z pointing down and the finger (y) axis at ``yaw`` about world z."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[-s, c, 0.0], [c, s, 0.0], [0.0, 0.0, -1.0]])


def summed_reach(data: mujoco.MjData, joints: list[int], tool: np.ndarray, base: np.ndarray) -> float:
    """Summed distances (m) from ``base`` through each joint anchor to ``tool``: a bound of the reach from it.

    The same in any pose when ``base`` is on the first joint's parent body, since consecutive anchors (and
    the tool) are rigidly linked through one body.
    """
    anchors = [np.asarray(base), *(data.xanchor[j] for j in joints), np.asarray(tool)]
    return float(sum(np.linalg.norm(b - a) for a, b in zip(anchors[:-1], anchors[1:], strict=True)))


def base_footprint(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    first_joint: int,
    robot: set[int] | frozenset[int],
    centre: np.ndarray,
) -> float:
    """Horizontal radius (m) of the robot's root body around ``centre``.

    The root is the body the first arm joint's body hangs from, up to the world: what a camera sees of the
    base whatever the arm does.
    """
    root = int(model.jnt_bodyid[first_joint])
    while int(model.body_parentid[root]) in robot:
        root = int(model.body_parentid[root])
    reach = [
        _horizontal_reach(model, data, g, np.asarray(centre[:2], dtype=np.float64))
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) == root
    ]
    return max(reach, default=0.0)


def _horizontal_reach(model: mujoco.MjModel, data: mujoco.MjData, geom: int, centre: np.ndarray) -> float:
    """Horizontal reach (m) of a geom from ``centre``: a mesh by its vertices, else by its bounding sphere.

    A mesh's bounding sphere can be half as large again as its footprint.
    """
    pos = data.geom_xpos[geom]
    mesh = int(model.geom_dataid[geom])
    if int(model.geom_type[geom]) == int(mujoco.mjtGeom.mjGEOM_MESH) and mesh >= 0:
        first, count = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
        verts = model.mesh_vert[first : first + count] @ data.geom_xmat[geom].reshape(3, 3).T + pos
        return float(np.linalg.norm(verts[:, :2] - centre, axis=1).max())
    return float(np.linalg.norm(pos[:2] - centre) + model.geom_rbound[geom])


def subtree_bodies(model: mujoco.MjModel, root: int) -> list[int]:
    """Ids of ``root`` and every body below it, in id order (MuJoCo numbers a parent before its children)."""

    def below(body: int) -> bool:
        while body > 0:
            body = int(model.body_parentid[body])
            if body == root:
                return True
        return False

    return [b for b in range(model.nbody) if b == root or below(b)]


class KinematicArm:
    """Forward and damped-least-squares inverse kinematics of an arm's tool site.

    Uses only ``mj_kinematics``, ``mj_comPos`` and ``mj_jacSite`` on a private ``MjData``.
    """

    def __init__(self, model: mujoco.MjModel, joints: tuple[str, ...], site: str) -> None:
        """Bind the arm ``joints`` (compiled names, command order) and the tool ``site`` of ``model``.

        Raises:
            ValueError: a joint or the site is not in the model.
        """
        self.model = model
        self.data = mujoco.MjData(model)
        ids = []
        for name in joints:
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                raise ValueError(f"KinematicArm: joint {name!r} not in the model")
            ids.append(jid)
        self.site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        if self.site < 0:
            raise ValueError(f"KinematicArm: site {site!r} not in the model")
        self.qadr = model.jnt_qposadr[ids]
        self.dofadr = model.jnt_dofadr[ids]
        limited = model.jnt_limited[ids].astype(bool)
        self.lower = np.where(limited, model.jnt_range[ids, 0], -np.inf)
        self.upper = np.where(limited, model.jnt_range[ids, 1], np.inf)
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))

    def _update(self, q: np.ndarray) -> None:
        self.data.qpos[self.qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def fk(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tool site position (3,) and rotation (3x3) in the model's world frame for joint positions ``q``."""
        self._update(q)
        return self.data.site_xpos[self.site].copy(), self.data.site_xmat[self.site].reshape(3, 3).copy()

    def ik(
        self,
        pos: np.ndarray,
        rot: np.ndarray,
        q0: np.ndarray,
        *,
        iterations: int = 40,
        damping: float = 0.05,
        tol: float = 1e-4,
    ) -> tuple[np.ndarray, float]:
        """Joint positions reaching ``pos``/``rot`` from ``q0`` by damped least squares, within joint limits.

        Returns:
            ``q`` and the remaining position error (m).
        """
        q = np.clip(np.asarray(q0, dtype=np.float64).copy(), self.lower, self.upper)
        err_pos = np.inf
        for _ in range(iterations):
            cur_pos, cur_rot = self.fk(q)
            e_pos = pos - cur_pos
            # Small-angle orientation error: half the sum of axis cross products.
            e_rot = 0.5 * sum(np.cross(cur_rot[:, i], rot[:, i]) for i in range(3))
            err_pos = float(np.linalg.norm(e_pos))
            if err_pos < tol and float(np.linalg.norm(e_rot)) < 10 * tol:
                break
            mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, self.site)
            jac = np.vstack([self._jacp[:, self.dofadr], self._jacr[:, self.dofadr]])
            err = np.concatenate([e_pos, e_rot])
            dq = jac.T @ np.linalg.solve(jac @ jac.T + damping**2 * np.eye(6), err)
            step = float(np.max(np.abs(dq)))
            if step > 0.3:
                dq *= 0.3 / step
            q = np.clip(q + dq, self.lower, self.upper)
        return q, err_pos
