"""The excitation's safety envelope: the plan check, the approach ramp and the monitor, on a bundled world."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
from r2s2r_capture.errors import EnvelopeViolation, IdentificationError  # noqa: E402
from r2s2r_capture.sysid.envelope import ArmTemplate, SafetyEnvelope, load_envelope  # noqa: E402
from r2s2r_capture.sysid.excitation_check import (  # noqa: E402
    Trajectory,
    approach_trajectory,
    check_excitation,
    plan_excitation,
)
from r2s2r_capture.sysid.excitation_monitor import ExcitationMonitor, StopReason  # noqa: E402
from r2s2r_capture.sysid.recording import (  # noqa: E402
    ExcitationConfig,
    excitation_centre,
    excitation_trajectory,
)
from r2s2r_sim.world.kinematics import KinematicArm  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402

ENV = SafetyEnvelope()
CMD_DT = 0.01  # s: the excitation's command period at its default 100 Hz


@pytest.fixture(scope="module")
def world() -> SimWorld:
    return SimWorld(world_path("tabletop-pick-v1"))


@pytest.fixture(scope="module")
def arm(world: SimWorld) -> ArmTemplate:
    return ArmTemplate.from_world(world)


@pytest.fixture(scope="module")
def home(world: SimWorld) -> np.ndarray:
    return world.joint_state()[0][: len(world.arm_joint_names)]


@pytest.fixture(scope="module")
def excitation(world: SimWorld, arm: ArmTemplate, home: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centre = excitation_centre(world.model, arm.joint_names, home)
    return excitation_trajectory(world.model, arm.joint_names, ExcitationConfig(), seed=0, center=centre)


def _ramp(home: np.ndarray, target: list[float], envelope: SafetyEnvelope = ENV) -> Trajectory:
    return approach_trajectory(home, np.array(target), envelope)


# ------------------------------------------------------------------------------------------------ the plan


def test_default_excitation_passes_with_its_margins_reported(arm: ArmTemplate, excitation, home) -> None:
    report = check_excitation(arm, excitation, ENV)
    assert np.all(report.peak_velocity <= ENV.velocity_cap_rad_s * (1 + 1e-6))
    assert report.peak_velocity.max() > 0.99  # the excitation is scaled to its 1 rad/s bound
    assert np.all(report.peak_acceleration < ENV.acceleration_cap_rad_s2)  # 4.2 rad/s² at most
    assert np.all(report.peak_effort < report.effort_cap)  # shoulder_lift 18.7 of 120 N·m
    assert np.all(report.q_min >= report.lower) and np.all(report.q_max <= report.upper)
    assert report.min_distance_m >= ENV.min_clearance_m
    assert report.tool_min[2] > 0.75  # above the table top
    assert "shoulder_lift" in report.describe()
    plan = plan_excitation(arm, home, excitation, ENV)  # home is the excitation's centre here
    assert plan.excitation_end_s - plan.excitation_start_s == pytest.approx(20.0)


def test_sim_world_is_taken_as_its_template(world: SimWorld, excitation) -> None:
    assert check_excitation(world, excitation, ENV).joint_names[0] == "shoulder_pan"


def test_a_joint_margin_breach_is_refused_naming_joint_limit_and_time(arm: ArmTemplate, home) -> None:
    plan = _ramp(home, [0.0, 0.3, 2.55, 0.0, 1.2416, 0.0])  # elbow toward its 2.6 rad limit
    crossing = plan.t[np.argmax(plan.q[:, 2] > 2.5)]
    match = (
        r"elbow position 2\.5\d\d rad is within 0\.100 rad of its upper limit 2\.600 rad .* "
        r"at t = \d\.\d+ s \(envelope joint_margin_rad\)"
    )
    with pytest.raises(EnvelopeViolation, match=match) as err:
        check_excitation(arm, plan, ENV)
    assert err.value.time_s == pytest.approx(crossing)
    assert err.value.subject == "elbow" and err.value.bound == pytest.approx(2.5)


def test_an_excitation_over_the_velocity_cap_is_refused(world: SimWorld, arm: ArmTemplate, home) -> None:
    fast = ExcitationConfig(max_velocity=2.0)
    t, q = excitation_trajectory(world.model, arm.joint_names, fast, seed=0, center=home)
    qd = np.gradient(q, t, axis=0)
    k = int(np.argmax(np.any(np.abs(qd) > 1.0 + 1e-6, axis=1)))
    joint = arm.joint_names[int(np.argmax(np.abs(qd[k]) > 1.0 + 1e-6))]
    match = (
        rf"{joint} velocity -?1\.\d+ rad/s exceeds the cap 1\.000 rad/s "
        rf"at t = {t[k]:.3f} s \(envelope velocity_cap_rad_s\)"
    )
    with pytest.raises(EnvelopeViolation, match=match):
        check_excitation(arm, (t, q), ENV)


def test_leaving_the_workspace_box_is_refused(world: SimWorld, arm: ArmTemplate, excitation) -> None:
    low_roof = dataclasses.replace(ENV, workspace_max_m=(1.0, 1.0, 1.1))
    fk = KinematicArm(world.model, arm.joint_names, "ee_site")
    z = np.array([fk.fk(q)[0][2] for q in excitation[1]])
    k = int(np.argmax(z > 1.1))
    match = (
        r"tool point 'ee_site' z 1\.1\d+ m is above the workspace max 1\.100 m "
        rf"at t = {excitation[0][k]:.3f} s \(envelope workspace_max_m\)"
    )
    with pytest.raises(EnvelopeViolation, match=match):
        check_excitation(arm, excitation, low_roof)


def test_reaching_into_the_table_is_refused_as_a_collision(arm: ArmTemplate, home) -> None:
    lower = _ramp(home, [0.0, 1.5, 1.6, 0.0, 1.2416, 0.0])  # shoulder forward: the fingers go into the table
    match = r"'\w+_geom' comes 0\.0\d+ m from 'table_top', closer than the clearance 0\.020 m \(collision\)"
    with pytest.raises(EnvelopeViolation, match=match) as err:
        check_excitation(arm, lower, ENV)
    assert err.value.rule == "min_clearance_m" and 0.0 < err.value.time_s < lower.t[-1]


def test_an_effort_over_the_cap_is_refused(arm: ArmTemplate, excitation) -> None:
    weak = dataclasses.replace(ENV, effort_cap_nm=5.0)  # holding the arm up takes more at the shoulder
    match = (
        r"shoulder_lift effort -?[\d.]+ N·m exceeds the cap 5\.00 N·m "
        r"at t = 0\.000 s \(envelope effort_cap_nm\)"
    )
    with pytest.raises(EnvelopeViolation, match=match):
        check_excitation(arm, excitation, weak)


def test_the_approach_stays_within_the_caps(home) -> None:
    far = np.array([1.5, -0.5, 0.8, 1.0, -0.5, 2.0])
    for env in (ENV, dataclasses.replace(ENV, acceleration_cap_rad_s2=0.5)):  # velocity-, then accel-bound
        ramp = approach_trajectory(home, far, env, rate_hz=100.0)
        qd = np.gradient(ramp.q, ramp.t, axis=0)
        qdd = np.gradient(qd, ramp.t, axis=0)
        assert np.abs(qd).max() <= env.velocity_cap_rad_s * (1 + 1e-9)
        assert np.abs(qdd).max() <= env.acceleration_cap_rad_s2 * (1 + 1e-9)
        np.testing.assert_array_equal(ramp.q[0], home)
        np.testing.assert_array_equal(ramp.q[-1], far)
        assert np.abs(qd[[0, -1]]).max() < 0.02  # from rest to rest
    # velocity-bound: 2 rad at 1 rad/s takes 1.875 * 2 = 3.75 s; with 0.5 rad/s² the acceleration rules
    assert approach_trajectory(home, far, ENV).t[-1] == pytest.approx(3.75, abs=0.011)
    slow = dataclasses.replace(ENV, acceleration_cap_rad_s2=0.5)
    assert approach_trajectory(home, far, slow).t[-1] == pytest.approx((5.7735 * 2 / 0.5) ** 0.5, abs=0.011)
    assert approach_trajectory(home, home, ENV).t.size == 1  # already there


def test_a_plan_whose_approach_breaches_is_refused(arm: ArmTemplate, home, excitation) -> None:
    start = np.array([0.0, 0.3, 2.55, 0.0, 1.2416, 0.0])
    with pytest.raises(EnvelopeViolation, match="elbow position"):
        plan_excitation(arm, start, excitation, ENV)


def test_a_trajectory_that_does_not_fit_is_refused(arm: ArmTemplate) -> None:
    with pytest.raises(IdentificationError, match="columns"):
        check_excitation(arm, (np.arange(3.0), np.zeros((3, 2))), ENV)
    with pytest.raises(IdentificationError, match="strictly increasing"):
        Trajectory(np.array([0.0, 0.0]), np.zeros((2, 6)))
    with pytest.raises(IdentificationError, match="NaN"):
        Trajectory(np.array([0.0, 1.0]), np.array([[0.0] * 6, [np.nan] * 6]))


# ------------------------------------------------------------------------------------------- the envelope


def test_envelope_describes_itself(arm: ArmTemplate) -> None:
    text = ENV.describe(arm)
    for words in (
        "joint range margin",
        "0.100 rad",
        "1.00 rad/s",
        "5.00 rad/s²",
        "80%",
        "z [0.00, 2.00]",
        "0.020 m",
        "0.050 s",
        "elbow",
        "2.500",
    ):
        assert words in text


def test_envelope_loads_from_a_yaml_section(tmp_path: Path) -> None:
    path = tmp_path / "cell.yaml"
    path.write_text("envelope:\n  velocity_cap_rad_s: 0.5\n  workspace_min_m: [0.0, -0.5, 0.76]\n")
    env = load_envelope(path)
    assert env.velocity_cap_rad_s == 0.5 and env.workspace_min_m == (0.0, -0.5, 0.76)
    assert env.joint_margin_rad == ENV.joint_margin_rad


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("other: {}\n", r"envelope: required section is missing"),
        ("envelope: {speed: 1}\n", r"envelope: unknown key\(s\) \['speed'\]"),
        ("envelope: {velocity_cap_rad_s: fast}\n", r"envelope\.velocity_cap_rad_s: must be a number"),
        (
            "envelope: {velocity_cap_rad_s: 20}\n",
            r"envelope\.velocity_cap_rad_s: must be in \(0, 10\] rad/s, got 20",
        ),
        ("envelope: {workspace_min_m: [0, 0]}\n", r"envelope\.workspace_min_m: must have 3 numbers"),
        (
            "envelope: {workspace_min_m: [0, 0, 2.5]}\n",
            r"envelope\.workspace_min_m and workspace_max_m: z must have min < max, got 2\.5 and 2\.0",
        ),
        ("envelope: [1, 2]\n", r"envelope: must be a mapping"),
    ],
)
def test_envelope_file_errors_name_file_and_field(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "cell.yaml"
    path.write_text(text)
    with pytest.raises(IdentificationError, match=rf"{re.escape(str(path))}: {match}"):
        load_envelope(path)


def test_envelope_refuses_bad_values_directly() -> None:
    with pytest.raises(
        IdentificationError, match=r"envelope\.joint_margin_rad: must be in \[0, 1\] rad, got -1"
    ):
        SafetyEnvelope(joint_margin_rad=-1.0)
    with pytest.raises(IdentificationError, match=r"envelope\.workspace_max_m: must be three finite"):
        SafetyEnvelope(workspace_max_m=(1.0, 1.0, float("nan")))


# -------------------------------------------------------------------------------------------- the monitor


def _monitor(arm: ArmTemplate, home: np.ndarray, start_s: float = 0.0) -> ExcitationMonitor:
    return ExcitationMonitor.for_arm(arm, ENV, start_s=start_s, start_q=home)


def test_monitor_stops_on_stale_joint_states(arm: ArmTemplate, home) -> None:
    mon = _monitor(arm, home)
    zero = np.zeros(6)
    mon.joint_state(0.01, home, zero)
    assert not mon.check(0.06, home).stop  # 50 ms since the last sample: the timeout, not past it
    verdict = mon.check(0.0601, home)
    assert verdict.stop and verdict.reason is StopReason.STALE_STATE and "0.050 s" in verdict.detail
    np.testing.assert_array_equal(verdict.hold, home)
    mon.joint_state(0.07, home + 0.01, zero)
    assert mon.check(0.07, home) is verdict  # stopped for good
    never = _monitor(arm, home, start_s=5.0)  # no sample ever: stale from the start, hold where it started
    assert never.check(5.06, home).reason is StopReason.STALE_STATE


def test_monitor_stops_on_tracking_error_before_the_setpoint_is_sent(arm: ArmTemplate, home) -> None:
    mon = _monitor(arm, home)
    mon.joint_state(0.0, home, np.zeros(6))
    assert not mon.check(0.0, home + 0.19).stop
    verdict = mon.check(0.01, home + np.array([0, 0, 0.25, 0, 0, 0]))
    assert verdict.reason is StopReason.TRACKING_ERROR and "elbow is 0.250 rad" in verdict.detail
    np.testing.assert_array_equal(verdict.hold, home)


def test_monitor_stops_on_request_and_on_samples_outside_the_envelope(arm: ArmTemplate, home) -> None:
    mon = _monitor(arm, home)
    mon.joint_state(0.0, home, np.zeros(6))
    mon.request_stop("Ctrl-C")
    verdict = mon.check(0.0, home)
    assert verdict.reason is StopReason.STOP_REQUESTED and verdict.detail == "Ctrl-C"
    near = home.copy()
    near[2] = 2.52  # inside the elbow's 0.1 rad margin
    for q, qd, words in (
        (near, np.zeros(6), "elbow measured at 2.520"),
        (home, np.full(6, 1.2), "1.200 rad/s"),
    ):
        mon = _monitor(arm, home)
        mon.joint_state(0.0, q, qd)
        verdict = mon.check(0.0, q)
        assert verdict.reason is StopReason.OUTSIDE_ENVELOPE and words in verdict.detail
    mon = _monitor(arm, home)
    mon.joint_state(1.0, home, np.zeros(6))
    mon.joint_state(0.5, near, np.zeros(6))  # older than the last: ignored
    assert not mon.check(1.0, home).stop


# ------------------------------------------------------------------------- the monitor driving the world


def _drive(world: SimWorld, arm: ArmTemplate, plan: Trajectory, fault_s: float, fault: str):
    """Run ``plan`` in ``world`` under the monitor with a fault from ``fault_s``; returns the stop verdict.

    Faults: ``stale``, the driver's joint states stop; ``knock``, a 250 N·m torque on the elbow for 50 ms
    (the arm hits something), more than its servo's 100 N·m; ``stall``, the driver stops taking commands.
    """
    world.reset(0)
    cols = [world.joint_names.index(n) for n in arm.joint_names]
    steps = int(round(CMD_DT / world.timestep))
    mon = ExcitationMonitor.for_arm(arm, ENV, start_s=world.time, start_q=world.joint_state()[0][cols])
    verdict = None
    for setpoint in plan.q:
        now = world.time
        q, qd, _ = world.joint_state()
        if fault != "stale" or now < fault_s:
            mon.joint_state(now, q[cols], qd[cols])
        verdict = mon.check(now, setpoint)
        if verdict.stop:
            break
        if fault != "stall" or now < fault_s:
            world.set_arm_command(setpoint)
        world.data.qfrc_applied[arm.dofadr[2]] = (
            250.0 if fault == "knock" and 0 <= now - fault_s < 0.05 else 0.0
        )
        world.step(steps)
    assert verdict is not None and verdict.stop, "the fault was not caught"
    world.set_arm_command(verdict.hold)
    return verdict, cols, steps


def _settles(world: SimWorld, cols: list[int], until_s: float, steps: int) -> np.ndarray:
    while world.time < until_s - 1e-9:
        world.data.qfrc_applied[:] = 0.0
        world.step(steps)
    return world.joint_state()[1][cols]


def test_the_default_excitation_runs_through_the_monitor_without_a_stop(world, arm, excitation) -> None:
    world.reset(0)
    cols = [world.joint_names.index(n) for n in arm.joint_names]
    steps = int(round(CMD_DT / world.timestep))
    mon = ExcitationMonitor.for_arm(arm, ENV, start_s=world.time, start_q=world.joint_state()[0][cols])
    worst = 0.0
    for setpoint in excitation[1]:
        q, qd, _ = world.joint_state()
        mon.joint_state(world.time, q[cols], qd[cols])
        assert not mon.check(world.time, setpoint).stop
        worst = max(worst, float(np.abs(setpoint - q[cols]).max()))
        world.set_arm_command(setpoint)
        world.step(steps)
    assert worst < ENV.tracking_error_rad  # the servos lag by about 0.1 rad at 1 rad/s


def test_lost_joint_states_mid_excitation_leave_the_arm_holding_within_100_ms(world, arm, excitation) -> None:
    fault_s = 9.0  # mid-excitation, the arm moving at up to 1 rad/s
    verdict, cols, steps = _drive(world, arm, Trajectory(*excitation), fault_s, "stale")
    assert verdict.reason is StopReason.STALE_STATE
    assert verdict.time_s - fault_s <= ENV.state_timeout_s + CMD_DT + 1e-9  # the hold is sent 60 ms after
    qd = _settles(world, cols, fault_s + 0.1, steps)
    np.testing.assert_allclose(world.data.ctrl[:6], verdict.hold)  # 0.1 s after the fault: holding
    # The servos (kv/kp = 0.1 s) bring the arm back to the last measured pose, 50 ms behind it.
    assert np.abs(qd).max() < 0.3
    qd = _settles(world, cols, fault_s + 0.4, steps)
    assert np.abs(qd).max() < 0.05
    assert np.abs(world.joint_state()[0][cols] - verdict.hold).max() < 0.01


def test_a_knock_stops_on_the_measured_speed_and_the_arm_holds_within_100_ms(world, arm, excitation) -> None:
    fault_s = 9.0
    verdict, cols, steps = _drive(world, arm, Trajectory(*excitation), fault_s, "knock")
    assert verdict.reason is StopReason.OUTSIDE_ENVELOPE and "elbow measured moving at" in verdict.detail
    assert verdict.time_s - fault_s <= 0.02 + 1e-9  # two command periods into the knock
    qd = _settles(world, cols, fault_s + 0.1, steps)
    np.testing.assert_allclose(world.data.ctrl[:6], verdict.hold)
    assert np.abs(qd).max() < 0.3
    qd = _settles(world, cols, fault_s + 0.4, steps)
    assert np.abs(qd).max() < 0.05


def test_a_stalled_driver_stops_on_tracking_error_and_the_arm_holds(world, arm, excitation) -> None:
    fault_s = 9.0
    verdict, cols, steps = _drive(world, arm, Trajectory(*excitation), fault_s, "stall")
    assert verdict.reason is StopReason.TRACKING_ERROR and "from its set-point" in verdict.detail
    qd = _settles(world, cols, verdict.time_s + 0.1, steps)
    np.testing.assert_allclose(world.data.ctrl[:6], verdict.hold)
    assert np.abs(qd).max() < 0.05  # the stalled arm had stopped where the hold puts it
    assert np.abs(world.joint_state()[0][cols] - verdict.hold).max() < 0.01
