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
    "reachable_tool_down_z",
    "reaches_tool_down",
    "subtree_bodies",
    "tool_down_reach",
    "tool_down_rotation",
]

# A tool-down target counts as reached when inverse kinematics ends this close (m), as in the reference
# policy and the scene layout.
REACHED_M = 0.003
# Tool-down reach: sampled configurations, how many of the farthest are refined outward, the outward step.
_REACH_SAMPLES = 3000
_REACH_REFINED = 8
_REACH_STEP_M = 0.01


def mat_to_quat(mat: np.ndarray) -> np.ndarray:
    """The wxyz quaternion of a 3x3 rotation matrix, as MuJoCo writes ``xquat`` (``mju_mat2Quat``)."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(mat, dtype=np.float64).reshape(9))
    return quat


def tool_down_rotation(yaw: float) -> np.ndarray:
    """Tool orientation (3x3, world) with z pointing down and the finger (y) axis at ``yaw`` about world z."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[-s, c, 0.0], [c, s, 0.0], [0.0, 0.0, -1.0]])


def tool_down_reach(arm: KinematicArm, axis_xy: np.ndarray, floor_z: float, *, seed: int = 0) -> float:
    """How far (m, horizontally from ``axis_xy``) the tool reaches pointing straight down, above ``floor_z``.

    Summed link lengths overstate the reach of a real arm (offsets, joint limits, the wrist held
    vertical) by a fifth to two thirds; this is the figure the scene and the reference policy live with.
    Configurations are drawn within the joint limits (unlimited joints over one turn); the farthest
    whose tool points within 45 deg of down and stands above ``floor_z`` are turned tool-down by inverse
    kinematics along their azimuth at their height (:func:`_tool_down_radius`).  Deterministic for a
    ``seed``.
    """
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(arm.lower), arm.lower, -np.pi)
    hi = np.where(np.isfinite(arm.upper), arm.upper, np.pi)
    qs = rng.uniform(lo, hi, size=(_REACH_SAMPLES, len(lo)))
    axis = np.asarray(axis_xy, dtype=np.float64)[:2]
    found: list[tuple[float, int, np.ndarray]] = []
    for k, q in enumerate(qs):
        pos, rot = arm.fk(q)
        if pos[2] >= floor_z and -rot[2, 2] >= np.cos(np.pi / 4):
            found.append((float(np.linalg.norm(pos[:2] - axis)), k, pos))
    best = 0.0
    for radius, k, pos in sorted(found, key=lambda f: -f[0])[:_REACH_REFINED]:
        if radius > 1e-6:
            best = max(best, _tool_down_radius(arm, axis, pos, qs[k]))
    return best


def _tool_down_radius(arm: KinematicArm, axis: np.ndarray, pos: np.ndarray, q0: np.ndarray) -> float:
    """The farthest radius (m) along ``pos``'s azimuth about ``axis``, at its height, reached tool-down.

    Bisected between half ``pos``'s radius and it (a tilted tool reaches further), or pushed outward 1 cm at
    a time while inverse kinematics still reaches (within :data:`REACHED_M`); 0 when neither end reaches.
    """
    radius = float(np.linalg.norm(pos[:2] - axis))
    ray = (pos[:2] - axis) / radius
    _, rot = arm.fk(q0)
    down = tool_down_rotation(float(np.arctan2(rot[1, 1], rot[0, 1])))

    def at(r: float, start: np.ndarray) -> tuple[np.ndarray, bool]:
        q, err = arm.ik(np.array([*(axis + r * ray), pos[2]]), down, start, iterations=80)
        return q, err < REACHED_M

    near, far = 0.5 * radius, radius
    q, ok = at(far, q0)
    if ok:
        near = far
        while ok:
            q_next, ok = at(near + _REACH_STEP_M, q)
            if ok:
                q, near = q_next, near + _REACH_STEP_M
        return near
    q, ok = at(near, q0)
    if not ok:
        return 0.0
    while far - near > _REACH_STEP_M / 2:
        q_mid, ok = at(0.5 * (near + far), q)
        if ok:
            q, near = q_mid, 0.5 * (near + far)
        else:
            far = 0.5 * (near + far)
    return near


def reachable_tool_down_z(
    arm: KinematicArm, xy: np.ndarray, z_high: float, z_low: float, yaw: float, q0: np.ndarray
) -> float:
    """The highest tool height in [z_low, z_high] (1 cm steps) the arm reaches tool-down above ``xy``.

    A small arm cannot carry as high as a large one; a height it cannot reach would leave the tool short of
    its goal and tilted.  ``z_low`` when none is reachable within :data:`REACHED_M`.
    """
    rot = tool_down_rotation(yaw)
    for z in np.arange(z_high, z_low - 1e-9, -0.01):
        _, err = arm.ik(np.array([xy[0], xy[1], z]), rot, q0, iterations=80)
        if err < REACHED_M:
            return float(z)
    return float(z_low)


def reaches_tool_down(
    arm: KinematicArm, home: np.ndarray, axis_xy: np.ndarray, target: np.ndarray, dyaw: float = 0.0
) -> bool:
    """Whether the tool reaches ``target`` (world) pointing down, as the reference policy would get there.

    The tool's yaw turns with the arm: at a point at azimuth ``a`` about the first joint it is the home
    pose's yaw plus ``a`` minus the home pose's azimuth (plus ``dyaw``), as when the first joint alone
    swings the arm there.  Inverse kinematics starts from home, then from home with the first joint turned
    toward the point: a path the policy's small steps would follow, which one long step from home may not.
    """
    axis = np.asarray(axis_xy, dtype=np.float64)[:2]
    pos, rot = arm.fk(home)
    home_dir = pos[:2] - axis
    home_az = float(np.arctan2(home_dir[1], home_dir[0])) if np.linalg.norm(home_dir) > 1e-3 else 0.0
    rel = np.asarray(target[:2], dtype=np.float64) - axis
    az = float(np.arctan2(rel[1], rel[0]))
    down = tool_down_rotation(float(np.arctan2(rot[1, 1], rot[0, 1])) + az - home_az + dyaw)
    seed = np.asarray(home, dtype=np.float64).copy()
    _, err = arm.ik(np.asarray(target, dtype=np.float64), down, seed, iterations=120)
    if err >= REACHED_M:
        seed[0] += az - home_az
        _, err = arm.ik(np.asarray(target, dtype=np.float64), down, seed, iterations=120)
    return err < REACHED_M


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
