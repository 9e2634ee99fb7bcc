"""Bullet stepping the emulated unit: the servos as joint torques, and the state handed back to MuJoCo.

:class:`BulletPhysics` is the world's step hook (``SimWorld.step_hook``): ``SimWorld`` keeps everything
that is not physics (the command queue that is the driver's latency, the judge's samples every
``SETTLE_SAMPLE_S``, the verdict), and each physics step is Bullet's.  The world's MuJoCo data is then
a mirror: Bullet's state is written into its ``qpos``/``qvel`` and MuJoCo derives the poses, velocities and
contacts the task judges, as a person judging a real cell sees where things are.

The driver is written from the profiled model's actuators, so a profile's ``physics.servos`` reach it as
they reach MuJoCo: each actuator's force is ``gain * ctrl + bias0 + bias1 * length + bias2 * velocity``
(a position servo: ``kp (ctrl - q) - kv qdot``), clipped to its ``forcerange``, on its joint or spread over
its fixed tendon's joints by their coefficients.  Links the model marks for gravity compensation get the
gravity torque from Bullet's inverse dynamics added, as an arm's firmware does; the sum is clipped to the
actuator's force range (the motor's torque limit).  Joint damping is Bullet's (``jointDamping``), and
Coulomb friction is Bullet's joint motor held at zero speed with the model's ``frictionloss`` as its force.
MuJoCo's armature and its contact solver settings have no counterpart here and are dropped.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pybullet

from r2s2r_sim.hardware.bullet_unit.scene import BulletScene
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["BulletPhysics"]


class BulletPhysics:
    """A Bullet client stepping ``world``'s scene; the world's step hook (see the module docstring).

    A context manager: the client disconnects on exit.  Not thread safe (the world's lock serialises it).
    """

    def __init__(self, world: SimWorld) -> None:
        """Connect a headless client and build the scene at the world's current state."""
        self.model = model = world.model
        self.client = pybullet.connect(pybullet.DIRECT)
        c = self.client
        self.dt = float(model.opt.timestep)
        pybullet.setPhysicsEngineParameter(fixedTimeStep=self.dt, numSubSteps=0, physicsClientId=c)
        pybullet.setGravity(*(float(g) for g in model.opt.gravity), physicsClientId=c)
        self.scene = BulletScene(c, world)
        uid, joints = self.scene.robot_uid, self.scene.joints
        self._indices = [j.index for j in joints]
        self._qadr = np.array([j.qadr for j in joints])
        self._dadr = np.array([j.dadr for j in joints])
        friction = [float(model.dof_frictionloss[j.dadr]) for j in joints]
        pybullet.setJointMotorControlArray(
            uid, self._indices, pybullet.VELOCITY_CONTROL, targetVelocities=[0.0] * len(joints),
            forces=friction, physicsClientId=c,
        )  # fmt: skip
        self._map = self._actuator_map(world)
        column = {int(d): i for i, d in enumerate(self._dadr)}
        # 1 where the robot declares gravity compensation for the joint's link, else 0.
        self._gravcomp = np.array(
            [float(model.body_gravcomp[model.jnt_bodyid[model.dof_jntid[d]]] > 0) for d in self._dadr]
        )
        limit = np.full(len(joints), np.inf)
        for act in range(model.nu):
            if model.actuator_forcelimited[act] and model.actuator_trntype[act] == mujoco.mjtTrn.mjTRN_JOINT:
                dof = int(model.jnt_dofadr[model.actuator_trnid[act, 0]])
                if dof in column:
                    limit[column[dof]] = float(np.abs(model.actuator_forcerange[act]).max())
        self._limit = limit
        self._any_gravcomp = bool(self._gravcomp.any())
        # The actuators' gain, biases and force range, read once (each read of a model field costs a call).
        limited = model.actuator_forcelimited.astype(bool)
        self._servo = (
            model.actuator_gainprm[:, 0].copy(),
            model.actuator_biasprm[:, 0].copy(),
            model.actuator_biasprm[:, 1].copy(),
            model.actuator_biasprm[:, 2].copy(),
            np.where(limited, model.actuator_forcerange[:, 0], -np.inf),
            np.where(limited, model.actuator_forcerange[:, 1], np.inf),
        )
        self._map_t = self._map.T.copy()
        # The servos' damping in joint space (negative semidefinite) times the step: the implicit part.
        self._implicit = self.dt * (self._map_t @ (self._servo[3][:, None] * self._map))
        self._zeros = [0.0] * len(joints)
        self.torques = np.zeros(len(joints))  # the torques applied in the last step (N m or N)
        self._initial = pybullet.saveState(physicsClientId=c)

    def _actuator_map(self, world: SimWorld) -> np.ndarray:
        """``(nu, n joints)``: how each actuator's length is made of the robot joints and its force spread."""
        m = self.model
        col = {int(d): i for i, d in enumerate(self._dadr)}
        out = np.zeros((m.nu, len(self._dadr)))
        for act in range(m.nu):
            kind, target = int(m.actuator_trntype[act]), int(m.actuator_trnid[act, 0])
            if kind == mujoco.mjtTrn.mjTRN_JOINT:
                out[act, col[int(m.jnt_dofadr[target])]] = float(m.actuator_gear[act, 0])
            elif kind == mujoco.mjtTrn.mjTRN_TENDON:
                start, count = int(m.tendon_adr[target]), int(m.tendon_num[target])
                for w in range(start, start + count):
                    joint = int(m.wrap_objid[w])
                    out[act, col[int(m.jnt_dofadr[joint])]] = float(m.wrap_prm[w]) * float(
                        m.actuator_gear[act, 0]
                    )
            else:
                name = m.actuator(act).name
                raise ValueError(f"world {world.world_id!r}: actuator {name!r}: only joint and "
                                 "tendon transmissions have a Bullet driver")  # fmt: skip
        return out

    def __enter__(self) -> BulletPhysics:
        """The client is connected in the constructor."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Disconnect the client."""
        self.close()

    def close(self) -> None:
        """Disconnect the client and remove the scene's files; closing twice is harmless."""
        if self.client >= 0:
            self.scene.close()
            pybullet.disconnect(physicsClientId=self.client)
            self.client = -1

    # ------------------------------------------------------------------------------- the step hook

    def control_tick(self, time: float) -> bool:
        """Queued commands reach the servos at every physics step (the driver runs at the physics rate)."""
        return True

    def reset(self, data: mujoco.MjData) -> None:
        """An episode's start: Bullet back to its built state (contact caches too), posed from ``data``."""
        pybullet.restoreState(self._initial, physicsClientId=self.client)
        self.scene.set_state(data.qpos)
        self.torques[:] = 0.0
        self._mirror(data)

    def before_step(self, data: mujoco.MjData) -> None:
        """Nothing: the servo torques are worked out in :meth:`physics_step`."""

    def servo_torques(self, data: mujoco.MjData) -> np.ndarray:
        """The driver's joint torques for the state and set-points in ``data`` (N m or N, joint order).

        The servo's spring and damper act on the state one step ahead (stable PD, Tan, Liu and Turk 2011):
        an explicit PD at a 2 ms step would be unstable on a wrist whose link inertia is a few 1e-4 kg m^2
        (MuJoCo's implicit integrator and its armature are what keep it stable there), so the acceleration
        the torque causes is solved for with Bullet's mass matrix and bias forces.
        """
        c, uid, dt, a, a_t = self.client, self.scene.robot_uid, self.dt, self._map, self._map_t
        q, qd = data.qpos[self._qadr], data.qvel[self._dadr]
        ql, zeros = q.tolist(), self._zeros
        feedforward = (
            self._gravcomp
            * np.array(pybullet.calculateInverseDynamics(uid, ql, zeros, zeros, physicsClientId=c))
            if self._any_gravcomp
            else 0.0
        )
        # Bias forces (Coriolis, centrifugal, gravity) and the mass matrix at this state.
        bias = np.array(pybullet.calculateInverseDynamics(uid, ql, qd.tolist(), zeros, physicsClientId=c))
        mass = np.array(pybullet.calculateMassMatrix(uid, ql, physicsClientId=c))
        gain, b0, b1, b2, lo, hi = self._servo
        force0 = (
            gain * data.ctrl + b0 + b1 * (a @ (q + dt * qd)) + b2 * (a @ qd)
        )  # the damper's explicit part
        qdd = np.linalg.solve(mass - self._implicit, a_t @ force0 + feedforward - bias)
        force = np.minimum(np.maximum(force0 + (b2 * dt) * (a @ qdd), lo), hi)
        return np.minimum(np.maximum(a_t @ force + feedforward, -self._limit), self._limit)

    def gravity_torques(self, q: np.ndarray) -> np.ndarray:
        """Joint torques that hold the robot still at ``q`` against gravity (Bullet's inverse dynamics)."""
        zeros = [0.0] * len(q)
        return np.asarray(
            pybullet.calculateInverseDynamics(
                self.scene.robot_uid, q.tolist(), zeros, zeros, physicsClientId=self.client
            )
        )

    def physics_step(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """One Bullet step under the servos' torques; its state written into ``data`` (time advanced)."""
        self.torques = self.servo_torques(data)
        pybullet.setJointMotorControlArray(
            self.scene.robot_uid, self._indices, pybullet.TORQUE_CONTROL, forces=self.torques.tolist(),
            physicsClientId=self.client,
        )  # fmt: skip
        pybullet.stepSimulation(physicsClientId=self.client)
        data.time += self.dt
        self.scene.read_robot(data.qpos, data.qvel)  # the next step's servos read it; the rest can wait

    def after_steps(self, data: mujoco.MjData) -> None:
        """A run of steps is over: the whole mirror, for whoever reads the state now."""
        self._mirror(data)

    def _mirror(self, data: mujoco.MjData) -> None:
        """Bullet's state into ``data``, its poses and contacts derived, the applied torques as efforts.

        Only what a reader of the state needs is derived: poses (``mj_kinematics``, ``mj_camlight``), body
        velocities (``mj_comPos``, ``mj_comVel``) and contacts (``mj_collision``); ``mj_forward`` would also
        solve MuJoCo's constraints, ten times the cost, for forces no one reads here.  Between the steps of
        one run only the servos read the state (the robot's joints, written at each step).
        """
        self.scene.read_state(data.qpos, data.qvel)
        m = self.model
        mujoco.mj_kinematics(m, data)
        mujoco.mj_comPos(m, data)
        mujoco.mj_camlight(m, data)
        mujoco.mj_comVel(m, data)
        mujoco.mj_collision(m, data)
        data.qfrc_actuator[:] = 0.0
        data.qfrc_actuator[self._dadr] = self.torques
