"""The robot of a world bound to its compiled model: joint, actuator and site ids resolved once, by name.

Resolving names once at load (and failing there, naming the field of ``world.yaml``) keeps the step loop
free of lookups; a name the robot file lacks is reported with the names it has.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError
from r2s2r_sim.world.config import WorldConfig
from r2s2r_sim.world.kinematics import subtree_bodies

__all__ = ["UNNAMED_ACTUATOR", "RobotBinding", "actuator_id", "bind_robot", "element_names"]

# ``#i`` or ``<unnamed #i>`` (as MuJoCo's messages show an unnamed element): the robot file's i-th actuator.
UNNAMED_ACTUATOR = re.compile(r"^(?:<unnamed\s*)?#(\d+)>?$")


def element_names(model: mujoco.MjModel, objtype: mujoco.mjtObj, count: int) -> list[str]:
    """The names of the first ``count`` elements of a kind (for error messages)."""
    return [mujoco.mj_id2name(model, objtype, i) or f"<unnamed #{i}>" for i in range(count)]


def actuator_id(model: mujoco.MjModel, ref: str, prefix: str = "") -> int:
    """The id of the actuator ``ref`` addresses in ``model``, or -1.

    ``ref`` is the actuator's name, ``#i`` (or ``<unnamed #i>``, as messages show it) for the robot file's
    i-th actuator (:func:`r2s2r_sim.world.robot_source.name_unnamed_actuators` names unnamed ones so), or
    the name of the one joint or tendon the actuator drives: a robot file need not name its actuators.
    """
    unnamed = UNNAMED_ACTUATOR.match(ref.strip())
    name = f"#{unnamed.group(1)}" if unnamed else ref
    act = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, prefix + name))
    if act >= 0 or unnamed:
        return act
    for objtype, trn in (
        (mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtTrn.mjTRN_JOINT),
        (mujoco.mjtObj.mjOBJ_TENDON, mujoco.mjtTrn.mjTRN_TENDON),
    ):
        target = int(mujoco.mj_name2id(model, objtype, prefix + ref))
        if target < 0:
            continue
        acts = [
            a
            for a in range(model.nu)
            if int(model.actuator_trntype[a]) == int(trn) and int(model.actuator_trnid[a, 0]) == target
        ]
        if len(acts) == 1:
            return acts[0]
    return -1


@dataclass(frozen=True, kw_only=True)
class RobotBinding:
    """Ids of the robot's joints, servos, sites and bodies in one compiled model."""

    arm_joint_names: tuple[str, ...]
    arm_jnt: np.ndarray
    arm_act: np.ndarray
    arm_limits: np.ndarray
    gripper_joint_names: tuple[str, ...]
    gripper_command_range: tuple[float, float] | None
    grip_jnt: np.ndarray
    grip_act: np.ndarray
    joint_names: tuple[str, ...]
    state_qadr: np.ndarray
    state_dadr: np.ndarray
    ee_site: int
    ee_body: int
    base_body: int
    robot_body_ids: frozenset[int]
    robot_body_mask: np.ndarray
    home_key: int
    home_qpos: np.ndarray


class _Binder:
    """Looks the robot's names up in the model, with errors that name the world file and field."""

    def __init__(self, model: mujoco.MjModel, config: WorldConfig, *, src: str, robot_rel: str) -> None:
        self.model = model
        self.config = config
        self._src = src
        self._robot_rel = robot_rel
        self._prefix = config.robot.prefix

    def _full(self, name: str) -> str:
        return self._prefix + name

    def _robot_names(self, objtype: mujoco.mjtObj) -> list[str]:
        count = {
            mujoco.mjtObj.mjOBJ_JOINT: self.model.njnt,
            mujoco.mjtObj.mjOBJ_ACTUATOR: self.model.nu,
            mujoco.mjtObj.mjOBJ_SITE: self.model.nsite,
            mujoco.mjtObj.mjOBJ_KEY: self.model.nkey,
        }[objtype]
        names = element_names(self.model, objtype, count)
        return [n[len(self._prefix) :] for n in names if n.startswith(self._prefix)]

    def _robot_id(self, objtype: mujoco.mjtObj, name: str, field: str, what: str) -> int:
        if objtype == mujoco.mjtObj.mjOBJ_ACTUATOR:
            idx = actuator_id(self.model, name, self._prefix)
        else:
            idx = int(mujoco.mj_name2id(self.model, objtype, self._full(name)))
        if idx < 0:
            raise WorldError(
                f"{self._src}: {field}: {what} {name!r} not in {self._robot_rel} "
                f"({what}s: {self._robot_names(objtype)})"
            )
        return idx

    def _actuator_for_joint(self, joint_id: int, name: str, field: str) -> int:
        model = self.model
        found = [
            i
            for i in range(model.nu)
            if int(model.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_JOINT)
            and model.actuator_trnid[i, 0] == joint_id
        ]
        if len(found) != 1:
            raise WorldError(
                f"{self._src}: {field}: joint {name!r} must be driven by exactly one actuator in "
                f"{self._robot_rel}, found {len(found)}"
            )
        act = found[0]
        # A position servo: affine bias with gain == -bias[1] (force = kp*(ctrl - q) - kv*qdot).
        kp = model.actuator_gainprm[act, 0]
        if int(model.actuator_biastype[act]) != int(mujoco.mjtBias.mjBIAS_AFFINE) or not math.isclose(
            kp, -model.actuator_biasprm[act, 1], rel_tol=1e-9
        ):
            raise WorldError(
                f"{self._src}: {field}: actuator {model.actuator(act).name!r} on joint {name!r} is not a "
                "position servo (ctrl must be a joint position; robot.servos turns a torque motor into one)"
            )
        return act

    def bind(self, root_name: str) -> RobotBinding:
        cfg = self.config.robot
        model = self.model
        jt = mujoco.mjtObj.mjOBJ_JOINT
        arm_joint_names = cfg.arm_joints
        arm_jnt = np.array(
            [self._robot_id(jt, n, f"robot.arm_joints[{i}]", "joint") for i, n in enumerate(cfg.arm_joints)],
            dtype=np.int64,
        )
        for i, (jid, name) in enumerate(zip(arm_jnt, cfg.arm_joints, strict=True)):
            if int(model.jnt_type[jid]) not in (
                int(mujoco.mjtJoint.mjJNT_HINGE),
                int(mujoco.mjtJoint.mjJNT_SLIDE),
            ):
                raise WorldError(
                    f"{self._src}: robot.arm_joints[{i}]: joint {name!r} must be a hinge or slide joint"
                )
        arm_act = np.array(
            [
                self._actuator_for_joint(int(j), n, f"robot.arm_joints[{i}]")
                for i, (j, n) in enumerate(zip(arm_jnt, cfg.arm_joints, strict=True))
            ],
            dtype=np.int64,
        )
        limits = np.full((len(arm_jnt), 2), [-np.inf, np.inf])
        for i, (jid, act) in enumerate(zip(arm_jnt, arm_act, strict=True)):
            if model.jnt_limited[jid]:
                limits[i] = model.jnt_range[jid]
            if model.actuator_ctrllimited[act]:
                lo, hi = model.actuator_ctrlrange[act]
                limits[i] = (max(limits[i, 0], lo), min(limits[i, 1], hi))
        limits.setflags(write=False)

        gripper_joint_names: tuple[str, ...] = ()
        gripper_command_range: tuple[float, float] | None = None
        grip_jnt = np.zeros(0, dtype=np.int64)
        grip_act = np.zeros(0, dtype=np.int64)
        if cfg.gripper is not None:
            g = cfg.gripper
            gripper_joint_names = g.joints
            grip_jnt = np.array(
                [
                    self._robot_id(jt, n, f"robot.gripper.joints[{i}]", "joint")
                    for i, n in enumerate(g.joints)
                ],
                dtype=np.int64,
            )
            grip_act = np.array(
                [
                    self._robot_id(mujoco.mjtObj.mjOBJ_ACTUATOR, n, "robot.gripper.actuator", "actuator")
                    for n in g.actuators
                ],
                dtype=np.int64,
            )
            for n, act in zip(g.actuators, grip_act.tolist(), strict=True):
                if act in set(arm_act.tolist()):
                    raise WorldError(f"{self._src}: robot.gripper.actuator: {n!r} also drives an arm joint")
            gripper_command_range = (min(g.command_range), max(g.command_range))
        joint_names = arm_joint_names + gripper_joint_names
        all_jnt = np.concatenate([arm_jnt, grip_jnt])
        state_qadr = model.jnt_qposadr[all_jnt]
        state_dadr = model.jnt_dofadr[all_jnt]

        ee_site = -1
        if cfg.ee_site is not None:
            ee_site = self._robot_id(mujoco.mjtObj.mjOBJ_SITE, cfg.ee_site, "robot.ee_site", "site")
        ee_body = int(model.jnt_bodyid[arm_jnt[-1]])
        base_body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, self._full(root_name))
        # Every body in the robot's subtree, for contact checks (e.g. "is the object held").
        root = base_body
        robot_body_ids = frozenset(subtree_bodies(model, root))
        # The same as a read-only mask over body ids, for vectorised contact checks.
        mask = np.zeros(model.nbody, dtype=bool)
        mask[sorted(robot_body_ids)] = True
        mask.setflags(write=False)

        home_key = -1
        home_qpos: np.ndarray | None = None
        if cfg.home_keyframe is not None:
            home_key = self._robot_id(
                mujoco.mjtObj.mjOBJ_KEY, cfg.home_keyframe, "robot.home_keyframe", "keyframe"
            )
            key_qpos = model.key_qpos[home_key]
            home_qpos = key_qpos[model.jnt_qposadr[arm_jnt]].copy()
        elif cfg.home_qpos is not None:
            home_qpos = np.asarray(cfg.home_qpos, dtype=np.float64)
        assert home_qpos is not None
        outside = (home_qpos < limits[:, 0] - 1e-9) | (home_qpos > limits[:, 1] + 1e-9)
        if np.any(outside):
            bad = [n for n, o in zip(arm_joint_names, outside, strict=True) if o]
            field = "robot.home_keyframe" if cfg.home_keyframe is not None else "robot.home_qpos"
            raise WorldError(f"{self._src}: {field}: home is outside the limits of joints {bad}")
        return RobotBinding(
            arm_joint_names=arm_joint_names,
            arm_jnt=arm_jnt,
            arm_act=arm_act,
            arm_limits=limits,
            gripper_joint_names=gripper_joint_names,
            gripper_command_range=gripper_command_range,
            grip_jnt=grip_jnt,
            grip_act=grip_act,
            joint_names=joint_names,
            state_qadr=state_qadr,
            state_dadr=state_dadr,
            ee_site=ee_site,
            ee_body=ee_body,
            base_body=base_body,
            robot_body_ids=robot_body_ids,
            robot_body_mask=mask,
            home_key=home_key,
            home_qpos=home_qpos,
        )


def bind_robot(
    model: mujoco.MjModel, config: WorldConfig, root_name: str, *, src: str, robot_rel: str
) -> RobotBinding:
    """Resolve the robot of ``config`` in ``model`` (its root body named ``root_name``).

    Raises:
        WorldError: a joint, servo, site or keyframe ``world.yaml`` names is missing or unfit, naming the
            file and the field.
    """
    return _Binder(model, config, src=src, robot_rel=robot_rel).bind(root_name)
