"""What a real arm adds to a rigid MuJoCo chain: compliance, backlash, Stribeck friction, torque limits.

Part of the EMULATED HARDWARE (a stand-in for a real arm).  MuJoCo's joints have viscous damping and a
constant ``frictionloss``; a geared joint also has a spring between motor and link (harmonic drives and
belts are compliant: a motor-side servo sees the link through it), static friction that drops to
Coulomb friction over a Stribeck velocity (the usual model, e.g. Olsson et al., "Friction models and
friction compensation", European Journal of Control 4(3), 1998), play in the gears (backlash: the servo
pushes only once the gear gap is taken up), a motor torque limit, and an encoder that reports positions in
counts.  None of these has a parameter in the simulated world, so identification can only find effective
values for them.

Each effect is optional; a profile without the ``arm_effects`` section is the rigid chain.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from r2s2r_sim.ranges import within
from r2s2r_sim.render.sensor_effects import read_numbers

__all__ = ["ArmEffects", "ArmEffectsState", "JointEffects", "read_arm_effects"]


@dataclass(frozen=True, kw_only=True)
class JointEffects:
    """One joint's unmodelled effects (SI: N m, rad, rad/s; N, m, m/s for a slide joint).

    Attributes:
        torque_limit: the motor's peak torque; the servo saturates there (``None``: the MJCF's).
        static_friction: breakaway friction at rest.
        coulomb_friction: sliding friction at speed (at most ``static_friction``).
        stribeck_velocity: speed over which friction falls from static to Coulomb.
        viscous_friction: friction per unit speed, on top of the MJCF damping.
        backlash: total play of the gears (the servo applies no torque inside +-backlash/2).
        stiffness: torsional stiffness between motor and link (N m/rad; ``None``: a rigid gear).
        motor_inertia: the motor's reflected inertia (kg m^2), for a compliant joint.
        gear_damping: damping across the compliance (N m s/rad).
    """

    torque_limit: float | None = within(None, "(0, 1e5]")
    static_friction: float = within(0.0, "[0, 1e4]")
    coulomb_friction: float = within(0.0, "[0, 1e4]")
    stribeck_velocity: float = within(0.05, "(0, 100]")
    viscous_friction: float = within(0.0, "[0, 1e4]")
    backlash: float = within(0.0, "[0, 0.5]")
    stiffness: float | None = within(None, "(0, 1e7]")
    motor_inertia: float = within(0.05, "(0, 100]")
    gear_damping: float = within(1.0, "[0, 1e4]")

    def __post_init__(self) -> None:
        if self.coulomb_friction > self.static_friction:
            raise ValueError(
                "coulomb_friction must not exceed static_friction: got "
                f"{self.coulomb_friction} and {self.static_friction}"
            )

    def dry_friction(self, velocity: np.ndarray | float) -> np.ndarray | float:
        """Magnitude of the dry (static-to-Coulomb) friction at ``velocity``: the Stribeck curve."""
        v = np.asarray(velocity, dtype=np.float64)
        return self.coulomb_friction + (self.static_friction - self.coulomb_friction) * np.exp(
            -((v / self.stribeck_velocity) ** 2)
        )


@dataclass(frozen=True, kw_only=True)
class ArmEffects:
    """The arm section of a hardware profile.

    Attributes:
        encoder_counts_per_rev: measured hinge positions are whole counts of ``2 pi / counts``
            (``None``: not quantised).
        joints: per-joint effects, by unprefixed joint name.
        physics_timestep_s: the cell's physics step (s), finer than the sim's (``None``: the world's).
        control_rate_hz: the driver's control loop; commands reach the servos only on its ticks
            (``None``: at the next physics step).
    """

    encoder_counts_per_rev: int | None = None
    joints: Mapping[str, JointEffects] = field(default_factory=dict)
    physics_timestep_s: float | None = None
    control_rate_hz: float | None = None

    @property
    def rigid(self) -> bool:
        """True when nothing is on: the arm is MuJoCo's rigid chain."""
        return (
            self.encoder_counts_per_rev is None
            and not self.joints
            and self.physics_timestep_s is None
            and self.control_rate_hz is None
        )


def read_arm_effects(r: Any, top: Mapping[str, Any]) -> ArmEffects:
    """The optional ``arm_effects`` section of a hardware profile (``r``: the profile's field reader).

    Raises:
        The reader's error, naming the field, for unknown keys and out-of-range values.
    """
    value = top.get("arm_effects")
    if value is None:
        return ArmEffects()
    data = r.mapping(value, "arm_effects")
    r.only(data, {"encoder_counts_per_rev", "joints", "physics_timestep_s", "control_rate_hz"}, "arm_effects")
    timestep = rate = None
    if data.get("physics_timestep_s") is not None:
        timestep = r.number(
            data["physics_timestep_s"], "arm_effects.physics_timestep_s", 0.0, 0.01, low_open=True
        )
    if data.get("control_rate_hz") is not None:
        rate = r.number(data["control_rate_hz"], "arm_effects.control_rate_hz", 1.0, 10000.0)
    counts = None
    if data.get("encoder_counts_per_rev") is not None:
        counts = r.integer(data["encoder_counts_per_rev"], "arm_effects.encoder_counts_per_rev", 16, 1 << 30)
    joints: dict[str, JointEffects] = {}
    for name, jvalue in r.mapping(data.get("joints") or {}, "arm_effects.joints").items():
        fld = f"arm_effects.joints.{name}"
        values = read_numbers(r, jvalue, fld, JointEffects)
        try:
            joints[str(name)] = JointEffects(**values)
        except ValueError as err:
            raise r.fail(fld, str(err)) from None
    return ArmEffects(
        encoder_counts_per_rev=counts, joints=joints, physics_timestep_s=timestep, control_rate_hz=rate
    )


def edit_spec(
    spec: mujoco.MjSpec,
    effects: ArmEffects,
    find_joint: Callable[[str], Any],
    fail: Callable[[str, str], Exception],
) -> None:
    """Set the physics step and saturate the actuator of every joint with a ``torque_limit``."""
    if effects.physics_timestep_s is not None:
        spec.option.timestep = effects.physics_timestep_s
    for name, joint in effects.joints.items():
        mj_joint = find_joint(name)
        if mj_joint is None:
            raise fail(
                f"arm_effects.joints.{name}",
                f"no joint {name!r} in the world (joints: {sorted(j.name for j in spec.joints if j.name)})",
            )
        if joint.torque_limit is None:
            continue
        acts = [
            a for a in spec.actuators if a.trntype == mujoco.mjtTrn.mjTRN_JOINT and a.target == mj_joint.name
        ]
        if not acts:
            raise fail(f"arm_effects.joints.{name}.torque_limit", f"joint {name!r} has no actuator to limit")
        for act in acts:
            act.forcelimited = True
            act.forcerange = np.array([-joint.torque_limit, joint.torque_limit])


@dataclass
class _Gear:
    """The gear train of one servoed joint: play, and optionally a spring between motor and link."""

    act: int
    qadr: int
    dof: int
    half_play: float
    kp: float
    kv: float
    effects: JointEffects
    motor: float = 0.0  # motor position, link units (compliant gears only)
    motor_vel: float = 0.0
    setpoint: float = 0.0
    written: float | None = None  # the servo input this gear last wrote

    def drive(self, data: mujoco.MjData, dt: float) -> None:
        """Write the servo input that makes MuJoCo's position actuator deliver what the gear passes on.

        A control that differs from what the gear last wrote is a new setpoint from the driver.
        """
        if self.written is None or float(data.ctrl[self.act]) != self.written:
            self.setpoint = float(data.ctrl[self.act])
        target = self.setpoint
        q, qd = float(data.qpos[self.qadr]), float(data.qvel[self.dof])
        j = self.effects
        if j.stiffness is None:  # a rigid gear with play: the servo pushes once the play is taken up
            error = target - q
            data.ctrl[self.act] = q + math.copysign(max(abs(error) - self.half_play, 0.0), error)
            self.written = float(data.ctrl[self.act])
            return
        # Backward Euler for the motor (its servo is far too stiff for an explicit step): the spring acts
        # outside the play (stiffness k, offset c), the servo unless it saturates at the torque limit.
        deflection = self.motor - q
        k = j.stiffness if abs(deflection) > self.half_play else 0.0
        c = math.copysign(self.half_play, deflection)
        kp, kv, drive = self.kp, self.kv, 0.0
        explicit = self.kp * (target - self.motor) - self.kv * self.motor_vel
        if j.torque_limit is not None and abs(explicit) > j.torque_limit:
            kp = kv = 0.0
            drive = math.copysign(j.torque_limit, explicit)
        d, m, v, inertia = j.gear_damping, self.motor, self.motor_vel, j.motor_inertia
        rhs = inertia * v + dt * (drive + kp * (target - m) - k * (m - q - c) + d * qd)
        self.motor_vel = rhs / (inertia + dt * (kv + d) + dt * dt * (kp + k))
        self.motor = m + dt * self.motor_vel
        deflection = self.motor - q
        play = math.copysign(max(abs(deflection) - self.half_play, 0.0), deflection)
        link = j.stiffness * play + d * (self.motor_vel - qd)
        # MuJoCo's servo gives kp (ctrl - q) - kv qd: choose ctrl so that it equals the gear's torque
        data.ctrl[self.act] = q + (link + self.kv * qd) / self.kp
        self.written = float(data.ctrl[self.act])


class ArmEffectsState:
    """Applies friction and the gears before every physics step, and quantises the measured positions.

    Dry friction goes through MuJoCo's own friction-loss constraint, whose level is set before each step
    to the Stribeck curve at the joint's speed: a constraint, unlike a smooth force, holds the joint at
    rest up to the breakaway level (but for a slow creep, see below).  Viscous friction is an applied
    force.  The joint's ``frictionloss`` from the MJCF or the profile's ``physics`` section is replaced,
    not added to.  A compliant joint's motor is a state integrated here: the servo drives the motor, and
    the spring (with the gear play) drives the link through MuJoCo's position actuator, whose input is
    chosen each step so that it delivers the spring's torque.
    """

    def __init__(self, model: mujoco.MjModel, effects: ArmEffects, prefix: str) -> None:
        self.effects = effects
        self.model = model
        self._friction: list[tuple[int, JointEffects]] = []
        self._gears: list[_Gear] = []
        for name, joint in effects.joints.items():
            jid = next(
                i
                for i in (
                    mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in (name, prefix + name)
                )
                if i >= 0
            )
            dof = int(model.jnt_dofadr[jid])
            if joint.static_friction > 0 or joint.viscous_friction > 0:
                self._friction.append((dof, joint))
                if joint.static_friction > 0:
                    # MuJoCo's friction loss is a soft constraint that lets a joint creep under a force
                    # below the level; the stiffest stable setting keeps that creep to ~1 mrad/s.
                    model.dof_solref[dof] = (2 * model.opt.timestep, 1.0)
                    model.dof_solimp[dof] = (0.99, 0.999, 0.001, 0.5, 2.0)
            if joint.backlash > 0 or joint.stiffness is not None:
                for act in range(model.nu):
                    if (
                        model.actuator_trntype[act] == mujoco.mjtTrn.mjTRN_JOINT
                        and model.actuator_trnid[act, 0] == jid
                    ):
                        kp = float(model.actuator_gainprm[act, 0])
                        kv = -float(model.actuator_biasprm[act, 2])
                        self._gears.append(
                            _Gear(act, int(model.jnt_qposadr[jid]), dof, joint.backlash / 2, kp, kv, joint)
                        )
        hinge = model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE
        self._hinge_qadr = set(int(a) for a in model.jnt_qposadr[hinge])
        self.control_period = None if effects.control_rate_hz is None else 1.0 / effects.control_rate_hz
        self._next_tick = 0.0

    def control_tick(self, clock: float) -> bool:
        """Whether the driver's control loop runs at physics time ``clock`` (s).

        Queued commands reach the servos only on its ticks.
        """
        if self.control_period is None:
            return True
        if clock + 1e-9 < self._next_tick:
            return False
        self._next_tick = (math.floor((clock + 1e-9) / self.control_period) + 1) * self.control_period
        return True

    def reset(self, data: mujoco.MjData) -> None:
        """At an episode's start: motors where their links are, at rest; the control loop restarts."""
        for gear in self._gears:
            gear.motor, gear.motor_vel, gear.written = float(data.qpos[gear.qadr]), 0.0, None
        self._next_tick = 0.0

    def before_step(self, data: mujoco.MjData) -> None:
        """Friction into the model and ``qfrc_applied``; each gear's torque into its servo's input."""
        for dof, joint in self._friction:
            v = float(data.qvel[dof])
            if joint.static_friction > 0:
                self.model.dof_frictionloss[dof] = joint.dry_friction(v)
            data.qfrc_applied[dof] = -joint.viscous_friction * v
        dt = float(self.model.opt.timestep)
        for gear in self._gears:
            gear.drive(data, dt)

    def physics_step(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """MuJoCo's step."""
        mujoco.mj_step(model, data)

    def after_steps(self, data: mujoco.MjData) -> None:
        """Nothing: MuJoCo's step leaves the state whole."""

    def measure(self, positions: np.ndarray, qpos_addresses: np.ndarray) -> np.ndarray:
        """Hinge positions rounded to whole encoder counts (others unchanged)."""
        counts = self.effects.encoder_counts_per_rev
        if counts is None:
            return positions
        step = 2 * math.pi / counts
        hinge = np.array([int(a) in self._hinge_qadr for a in qpos_addresses])
        out = positions.copy()
        out[hinge] = np.rint(out[hinge] / step) * step
        return out
