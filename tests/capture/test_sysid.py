"""Dynamics identification: recover known perturbed arm parameters from simulated 'real' data."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from mujoco import sysid as mjsysid
from r2s2r_capture.cli import calibration as calibration_cli
from r2s2r_capture.cli import sysid as sysid_cli
from r2s2r_capture.errors import IdentificationError
from r2s2r_capture.sysid import identify as S
from r2s2r_capture.sysid.effort_correction import apply_effort_correction
from r2s2r_capture.sysid.effort_fit import EFFORT_SENSOR, with_effort_sensors
from r2s2r_capture.sysid.recording import (
    ExcitationConfig,
    JointRecording,
    excitation_centre,
    excitation_trajectory,
    move_commands,
)
from r2s2r_capture.sysid.report import DELAY_NUMERIC, IdentificationResult, write_identification
from r2s2r_capture.sysid.rollout import RecordingProblem, simulate_recording

ARM = Path(__file__).resolve().parents[2] / "src/r2s2r_sim/r2s2r_sim/worlds/tabletop_pick/robot/arm6.xml"
ALL = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
FIT = ("shoulder_pan", "shoulder_lift", "elbow")
TRUE_DELAY = 0.01  # s; one command period at 100 Hz
TRUE_FRICTION = 0.3  # N m


def _truth_model() -> mujoco.MjModel:
    """The 'real' arm: damping x2, armature x1.5, kp x0.8, friction loss 0.3 N m on the fitted joints."""
    spec = mujoco.MjSpec.from_file(str(ARM))
    nominal = spec.compile()
    for name in FIT:
        dof = nominal.jnt_dofadr[nominal.joint(name).id]
        joint = spec.joint(name)
        joint.damping = [2.0 * nominal.dof_damping[dof], 0.0, 0.0]
        joint.armature = 1.5 * nominal.dof_armature[dof]
        joint.frictionloss = TRUE_FRICTION
        mjsysid.apply_pgain(spec, name, 0.8 * nominal.actuator(name).gainprm[0])
    return spec.compile()


@pytest.fixture(scope="module")
def recording() -> JointRecording:
    nominal = mujoco.MjModel.from_xml_path(str(ARM))
    home = np.array([nominal.key_qpos[0][nominal.jnt_qposadr[nominal.joint(n).id]] for n in ALL])
    cfg = ExcitationConfig(duration_s=6.0, base_freq_hz=0.25, max_velocity=1.5, ramp_s=0.5)
    t, q_cmd = excitation_trajectory(nominal, ALL, cfg, seed=1, center=home)
    return simulate_recording(_truth_model(), t, q_cmd, ALL, delay_s=TRUE_DELAY)


@pytest.fixture(scope="module")
def result(recording: JointRecording) -> IdentificationResult:
    return S.identify(ARM, recording, S.SysidConfig(joints=FIT, max_iters=20))


def test_excitation_within_limits_and_seeded() -> None:
    model = mujoco.MjModel.from_xml_path(str(ARM))
    cfg = ExcitationConfig(duration_s=10.0, max_velocity=0.8)
    t, q = excitation_trajectory(model, ALL, cfg, seed=7)
    assert q.shape == (t.size, 6) and t[-1] == pytest.approx(10.0)
    for k, name in enumerate(ALL[:5]):  # wrist_3 is unlimited
        lo, hi = model.jnt_range[model.joint(name).id]
        assert lo < q[:, k].min() and q[:, k].max() < hi
    assert np.max(np.abs(np.gradient(q, t, axis=0))) <= 0.8 + 1e-9
    np.testing.assert_allclose(q[0], (model.jnt_range[:6].sum(axis=1) / 2) * [1, 1, 1, 1, 1, 0], atol=1e-12)
    np.testing.assert_array_equal(q, excitation_trajectory(model, ALL, cfg, seed=7)[1])
    assert not np.array_equal(q, excitation_trajectory(model, ALL, cfg, seed=8)[1])
    assert np.all(np.ptp(q, axis=0) > 0.3)  # every joint moves
    with pytest.raises(IdentificationError, match="joint 'nope' not in the model"):
        excitation_trajectory(model, ["nope"], seed=0)
    with pytest.raises(IdentificationError, match=r"excitation\.max_velocity: must be > 0, got 0\.0"):
        ExcitationConfig(max_velocity=0.0)


def test_excitation_of_a_continuous_joint_centres_where_it_starts() -> None:
    """A continuous joint whose home is at or past pi (e.g. Kinova Gen3 joint_3) gets half a turn each way."""
    model = mujoco.MjModel.from_xml_path(str(ARM))
    assert not model.jnt_limited[model.joint("wrist_3").id]
    cfg = ExcitationConfig(duration_s=10.0, range_fraction=0.5, max_velocity=5.0)
    center = (model.jnt_range[:6].sum(axis=1) / 2) * [1, 1, 1, 1, 1, 0] + [0, 0, 0, 0, 0, math.pi + 1e-4]
    t, q = excitation_trajectory(model, ALL, cfg, seed=7, center=center)
    assert q[0, 5] == pytest.approx(center[5], abs=1e-12)
    swing = np.abs(q[:, 5] - center[5])
    assert 0.3 < swing.max() <= 0.5 * math.pi + 1e-9  # range_fraction of the half turn around the centre
    limited = center.copy()
    limited[0] = model.jnt_range[model.joint("shoulder_pan").id, 1] + 0.1
    with pytest.raises(IdentificationError, match="must lie strictly inside the joint limits"):
        excitation_trajectory(model, ALL, cfg, seed=7, center=limited)


def test_a_home_near_a_limit_is_excited_about_a_centre_with_room() -> None:
    """A folded elbow 0.1 rad from its limit would swing a tenth of a radian about home (too little
    to see its inertia): the excitation's centre keeps 0.6 rad (or 15 % of the range) off each limit, and
    the capture moves there and back smoothly, outside the excitation."""
    model = mujoco.MjModel.from_xml_path(str(ARM))
    lo, hi = model.jnt_range[model.joint("elbow").id]
    home = np.array([0.0, 0.3, hi - 0.1, 0.0, 1.2416, 0.0])
    centre = excitation_centre(model, ALL, home)
    assert centre[2] == pytest.approx(hi - 0.6)
    assert np.delete(centre, 2) == pytest.approx(np.delete(home, 2))  # joints with room stay
    cfg = ExcitationConfig(duration_s=10.0, max_velocity=0.8)
    _, q = excitation_trajectory(model, ALL, cfg, seed=7, center=centre)
    _, q_home = excitation_trajectory(model, ALL, cfg, seed=7, center=_inside_home(model, home))
    assert np.ptp(q[:, 2]) > 2 * np.ptp(q_home[:, 2])  # 0.6 rad of room for 0.26
    moves = move_commands(home, centre, 100.0, 0.4)
    assert moves[-1] == pytest.approx(centre) and len(moves) >= 100 * 1.875 * 0.5 / 0.4
    speed = np.abs(np.diff(np.vstack([home, moves]), axis=0)) * 100.0
    assert speed.max() <= 0.4 + 1e-6
    assert move_commands(home, home, 100.0, 0.4).shape == (0, 6)


def _inside_home(model: mujoco.MjModel, home: np.ndarray) -> np.ndarray:
    """``home`` itself as the centre, kept strictly inside the limits (what the capture used to take)."""
    lo, hi = model.jnt_range[model.joint("elbow").id]
    out = home.copy()
    out[2] = min(out[2], hi - 0.05 * (hi - lo))
    return out


def test_identification_recovers_truth(result: IdentificationResult) -> None:
    print("\n" + result.summary() + f"\nwall {result.wall_s:.2f} s")
    nominal_model = mujoco.MjModel.from_xml_path(str(ARM))
    truth = _truth_model()
    for name in FIT:
        dof = truth.jnt_dofadr[truth.joint(name).id]
        aid = truth.actuator(name).id
        for kind, true in (
            ("damping", truth.dof_damping[dof]),
            ("armature", truth.dof_armature[dof]),
            ("kp", truth.actuator_gainprm[aid, 0]),
        ):
            key = f"{name}/{kind}"
            before = abs(result.nominal[key] - true) / true
            after = abs(result.fitted[key] - true) / true
            assert after <= 0.5 * before and after < 0.05, (key, before, after)
        assert nominal_model.dof_frictionloss[dof] == 0.0
        assert abs(result.fitted[f"{name}/frictionloss"] - TRUE_FRICTION) < 0.05
    assert abs(result.fitted["command_delay_s"] - TRUE_DELAY) < 0.01  # within one command period
    assert result.rms_val_after < 0.2 * result.rms_val_before
    assert result.rms_train_after < 0.2 * result.rms_train_before
    assert result.n_train + result.n_val == 601 and result.n_val == 150
    assert result.iterations >= 1 and result.stop_reason and not result.warnings


def test_a_fit_that_never_moved_says_so(recording: JointRecording, result: IdentificationResult) -> None:
    """Zero iterations on a recording the robot file already reproduces is a perfect fit; with error left it
    means every 'fitted' value is the file's own, which the summary and sysid.yaml must say."""
    nominal = mujoco.MjModel.from_xml_path(str(ARM))
    exact = simulate_recording(nominal, recording.t, recording.q_cmd, ALL)
    perfect = S.identify(ARM, exact, S.SysidConfig(joints=FIT, max_iters=20))
    assert perfect.iterations == 0 and "gradient" in perfect.stop_reason
    assert not perfect.warnings, perfect.warnings
    stalled = dataclasses.replace(result, iterations=0, stop_reason=perfect.stop_reason)
    assert len(stalled.warnings) == 1 and "0 iterations" in stalled.warnings[0]
    assert "warning: the optimiser stopped after 0 iterations" in stalled.summary()


def test_residual_weights_ignore_where_each_joint_zero_is() -> None:
    """With the weights, mujoco.sysid's normalised residual is the same whatever a joint's offset."""
    rng = np.random.default_rng(3)
    swing = rng.normal(size=(200, 4)) * [0.2, 0.5, 0.05, 1.0]
    error = rng.normal(size=(200, 4)) * 1e-3
    normalised = []
    for offset in ([0, 0, 0, 0], [3.0, -2.2, 1.0, 0.0]):
        measured = swing + offset
        res = mjsysid.weighted_diff(predicted_data=measured - error, measured_data=measured)
        res = res * S.centred_weights(measured)
        normalised.append(mjsysid.normalize_residual(res, measured))
    np.testing.assert_allclose(normalised[0], normalised[1], rtol=1e-9)
    excitation = np.linalg.norm(swing - swing.mean(axis=0), axis=0) / math.sqrt(2)
    np.testing.assert_allclose(normalised[1], error / excitation, rtol=1e-9)
    # A constant column (a joint that never moved) gets a large but finite weight, not a division by zero.
    assert np.all(np.isfinite(S.centred_weights(np.ones((10, 2)))))


def test_write_identification(result: IdentificationResult, tmp_path: Path) -> None:
    paths = write_identification(result, tmp_path / "out")
    model = mujoco.MjModel.from_xml_path(str(paths["mjcf"]))
    dof = model.jnt_dofadr[model.joint("elbow").id]
    assert model.dof_damping[dof] == pytest.approx(result.fitted["elbow/damping"], rel=1e-5)  # MJCF: 6 digits
    assert model.actuator("elbow").gainprm[0] == pytest.approx(result.fitted["elbow/kp"], rel=1e-5)
    assert model.actuator("elbow").biasprm[1] == pytest.approx(-result.fitted["elbow/kp"], rel=1e-5)
    assert model.numeric(DELAY_NUMERIC).data[0] == pytest.approx(result.fitted["command_delay_s"], rel=1e-5)
    summary = yaml.safe_load(paths["summary"].read_text())
    assert summary["rms_joint_error_rad"]["validation"]["after"] == pytest.approx(result.rms_val_after)
    assert summary["optimiser"]["iterations"] == result.iterations and summary["warnings"] == []
    assert "<html" in paths["report"].read_text()[:500].lower()
    with pytest.raises(IdentificationError, match="already exists"):
        write_identification(result, tmp_path / "out", report=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left behind


def test_write_identification_finds_meshes_from_the_robots_folder(
    result: IdentificationResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A robot identified from its spec, with relative mesh paths and no meshdir (as ``MjSpec.to_xml``
    writes): the meshes are found from the robot's folder, whatever the working directory."""
    robot_dir = tmp_path / "robot"
    (robot_dir / "meshes").mkdir(parents=True)
    (robot_dir / "meshes" / "m.obj").write_text(
        "v 0 0 0\nv 0.01 0 0\nv 0 0.01 0\nv 0 0 0.01\nf 1 3 2\nf 1 2 4\n"
    )
    xml = ARM.read_text().replace(
        "<worldbody>", '<asset><mesh name="m" file="meshes/m.obj"/></asset>\n  <worldbody>', 1
    )
    with_mesh = dataclasses.replace(
        result, toolbox={**result.toolbox, "model_xml": xml, "model_dir": robot_dir}
    )
    monkeypatch.chdir(tmp_path)
    paths = write_identification(with_mesh, tmp_path / "out", report=False)
    assert mujoco.MjModel.from_xml_path(str(paths["mjcf"])).nmesh == 1


def test_recording_npz_round_trip_and_errors(recording: JointRecording, tmp_path: Path) -> None:
    path = recording.save_npz(tmp_path / "rec.npz")
    back = JointRecording.load_npz(path)
    assert back.joint_names == ALL
    np.testing.assert_array_equal(back.q, recording.q)
    with pytest.raises(IdentificationError, match="already exists"):
        recording.save_npz(path)
    np.savez(tmp_path / "bad.npz", t=recording.t)
    with pytest.raises(IdentificationError, match=r"lacks arrays \['q_cmd', 'q', 'qd', 'joint_names'\]"):
        JointRecording.load_npz(tmp_path / "bad.npz")
    with pytest.raises(IdentificationError, match=r"q must have shape \(len\(t\), len\(joint_names\)\)"):
        dataclasses.replace(recording, q=recording.q[:, :2])
    with pytest.raises(IdentificationError, match="strictly increasing"):
        dataclasses.replace(recording, t=recording.t[::-1].copy())


def test_static_arm_and_bad_config(recording: JointRecording) -> None:
    static = dataclasses.replace(recording, q_cmd=np.tile(recording.q_cmd[:1], (recording.t.size, 1)))
    with pytest.raises(IdentificationError, match="barely move .* record an excitation trajectory"):
        S.identify(ARM, static)
    with pytest.raises(IdentificationError, match="kinds \\['mass'\\] unknown"):
        S.SysidConfig(kinds=("mass",))
    with pytest.raises(IdentificationError, match="joint 'gripper' is not in the recording"):
        S.identify(ARM, recording, S.SysidConfig(joints=("gripper",)))
    with pytest.raises(IdentificationError, match="cannot be loaded"):
        S.identify(ARM.with_name("missing.xml"), recording)


def _run(register: object, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="r2s2r")
    register(parser.add_subparsers())  # type: ignore[operator]
    ns = parser.parse_args(argv)
    return int(ns.func(ns))


def test_cli_sysid_and_board(
    recording: JointRecording, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sysid_cli.SYSID_KINDS == S.PARAM_KINDS
    data = recording.save_npz(tmp_path / "rec.npz")
    argv = [
        "sysid",
        str(data),
        "--model",
        str(ARM),
        "-o",
        str(tmp_path / "out"),
        "--joints",
        "elbow",
        "--kinds",
        "kp",
        "--max-iters",
        "5",
        "--no-report",
    ]
    assert _run(sysid_cli.register_sysid, argv) == 0
    assert (tmp_path / "out" / "arm6_identified.xml").is_file()
    assert _run(sysid_cli.register_sysid, argv) == 2
    assert "already exists" in capsys.readouterr().err
    assert _run(calibration_cli.register_board, ["board", "-o", str(tmp_path / "b.png"), "--pdf"]) == 0
    assert (tmp_path / "b.pdf").is_file()
    assert (
        _run(calibration_cli.register_calibrate, ["calibrate", str(tmp_path), "-o", str(tmp_path / "c.yaml")])
        == 2
    )
    assert "1 of 1 views have >= 8 board corners; need 5" in capsys.readouterr().err


def test_effort_correction_keeps_the_damping_of_a_world_without_any() -> None:
    """A world with no joint damping (many robot files): the damping the efforts find is not clipped away.

    The effort correction moves viscous friction from the servo's kv into joint damping; the sum, which
    positions fit, must be kept whatever the world's nominal damping was.
    """
    spec = mujoco.MjSpec.from_file(str(ARM))
    spec.joint("elbow").damping = [0.0, 0.0, 0.0]
    model = spec.compile()
    t = np.arange(50) * 0.01
    q = np.tile(np.linspace(0.0, 0.5, 50)[:, None], (1, 3))
    rec = JointRecording(t, q, q, np.zeros_like(q), FIT, effort=np.zeros_like(q))
    cfg = S.SysidConfig(kinds=("kp", "kv", "armature", "frictionloss"), fit_delay=False)
    params = S.build_params(spec, model, RecordingProblem(model, rec), cfg)
    kv = -float(model.actuator("elbow").biasprm[2])
    assert params["elbow/damping"].nominal[0] == 0.0 and params["elbow/damping"].frozen
    beta = 0.15 * kv  # the profile's damping where a world has none: kv x U(0.05, 0.2)
    applied = apply_effort_correction(params, FIT, np.ones(3), np.array([0.0, 0.0, beta]))
    assert applied["elbow"] == (1.0, pytest.approx(beta))
    assert params["elbow/damping"].value[0] == pytest.approx(beta)
    assert params["elbow/kv"].value[0] + params["elbow/damping"].value[0] == pytest.approx(kv)


def test_efforts_identify_what_a_robot_file_leaves_out() -> None:
    """A robot file without joint damping or armature (many are): the efforts find both, and friction loss.

    Positions see only kv + damping and barely see a stiff servo's armature; the efforts carry kv alone
    and the inertia the servo pushes against.
    """
    bare = mujoco.MjSpec.from_file(str(ARM))
    for name in FIT:
        bare.joint(name).damping = [0.0, 0.0, 0.0]
        bare.joint(name).armature = 0.0
    nominal = mujoco.MjModel.from_xml_path(str(ARM))
    home = np.array([nominal.key_qpos[0][nominal.jnt_qposadr[nominal.joint(n).id]] for n in ALL])
    cfg = ExcitationConfig(duration_s=6.0, base_freq_hz=0.25, max_velocity=1.5, ramp_s=0.5)
    t, q_cmd = excitation_trajectory(nominal, ALL, cfg, seed=2, center=home)
    truth = _truth_model()
    rec = simulate_recording(truth, t, q_cmd, ALL, delay_s=TRUE_DELAY)
    kinds = ("armature", "frictionloss", "kp", "kv")
    result = S.identify(bare, rec, S.SysidConfig(joints=FIT, kinds=kinds, max_iters=30))
    print("\n" + result.summary())
    for name in FIT:
        dof = truth.jnt_dofadr[truth.joint(name).id]
        for kind, true in (
            ("damping", truth.dof_damping[dof]),
            ("armature", truth.dof_armature[dof]),
            ("frictionloss", TRUE_FRICTION),
        ):
            assert result.fitted[f"{name}/{kind}"] == pytest.approx(true, rel=0.1), (name, kind)
    # The robot's own sensors are not in the fit's copy, and the caller's spec is left as it was.
    assert not bare.sensors


def test_effort_sensors_replace_the_robots_own() -> None:
    spec = mujoco.MjSpec.from_file(str(ARM))
    spec.add_sensor(
        name="tool_force",
        type=mujoco.mjtSensor.mjSENS_JOINTPOS,
        objtype=mujoco.mjtObj.mjOBJ_JOINT,
        objname="elbow",
    )
    copy = with_effort_sensors(spec, ("elbow", "shoulder_pan"))
    model = copy.compile()
    assert [model.sensor(i).name for i in range(model.nsensor)] == [
        EFFORT_SENSOR.format("elbow"),
        EFFORT_SENSOR.format("shoulder_pan"),
    ]
    assert [s.name for s in spec.sensors] == ["tool_force"]


def test_a_servo_modelled_without_damping_is_identified() -> None:
    """kv 0 in the robot file, the joint's damping standing in for it (several vendors' files): its kv is
    searched over an absolute range instead of being refused, and the damping is still recovered."""

    def undamped(spec: mujoco.MjSpec) -> mujoco.MjSpec:
        spec.actuator("elbow").biasprm[2] = 0.0
        return spec

    bare = undamped(mujoco.MjSpec.from_file(str(ARM)))
    nominal = bare.compile()
    truth_spec = undamped(mujoco.MjSpec.from_file(str(ARM)))
    truth_spec.joint("elbow").damping = [4.0, 0.0, 0.0]  # the file has 1
    truth = truth_spec.compile()
    home = np.array([nominal.key_qpos[0][nominal.jnt_qposadr[nominal.joint(n).id]] for n in ALL])
    cfg = ExcitationConfig(duration_s=6.0, base_freq_hz=0.25, max_velocity=1.5, ramp_s=0.5)
    t, q_cmd = excitation_trajectory(nominal, ALL, cfg, seed=3, center=home)
    rec = simulate_recording(truth, t, q_cmd, ALL)
    sysid_cfg = S.SysidConfig(joints=("elbow",), kinds=("kp", "kv", "damping"), fit_delay=False, max_iters=20)
    params = S.build_params(bare, nominal, RecordingProblem(nominal, rec), sysid_cfg)
    assert params["elbow/kv"].nominal[0] == 0.0 and params["elbow/kv"].max_value[0] > 10.0
    result = S.identify(bare, rec, sysid_cfg)
    print("\n" + result.summary())
    assert rec.effort is not None  # the efforts tell the servo's kv from the joint's damping
    assert result.fitted["elbow/damping"] == pytest.approx(4.0, rel=0.05)
    assert result.fitted["elbow/kv"] < 0.2
