"""A world's declared joint-reading noise: the sim reports its joints with it, seeded per episode."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import BUNDLED
from r2s2r_capture.sysid.joint_motion import JointMotion, reading_noise
from r2s2r_sim.cells.sim_cell import SimCell
from r2s2r_sim.errors import WorldError
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.world.sim_world import SimWorld


def _world(tmp_path: Path, noise: object) -> Path:
    dst = tmp_path / "world"
    shutil.copytree(BUNDLED, dst)
    raw = yaml.safe_load((dst / "world.yaml").read_text())
    raw["robot"]["joint_state_noise"] = noise
    (dst / "world.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return dst


def _readings(cell: SimCell, seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cell.reset(seed)
    pos, vel = [], []
    for _ in range(n):
        p, v, _ = cell.joint_state()
        pos.append(p)
        vel.append(v)
    true_pos, _, _ = cell.world.joint_state()
    return np.array(pos), np.array(vel), true_pos


def test_readings_carry_the_declared_noise_and_the_physics_does_not(tmp_path: Path) -> None:
    folder = _world(tmp_path, {"position_std": 0.002, "velocity_std": 0.03})
    world = SimWorld(folder)
    cell = SimCell(world, world_dir=folder)
    pos, vel, true_pos = _readings(cell, 5, 400)
    # 400 draws per joint: the sample std is within 10 % of the declared one (about 5 standard errors).
    np.testing.assert_allclose(np.std(pos - true_pos, axis=0), 0.002, rtol=0.1)
    np.testing.assert_allclose(np.std(vel, axis=0), 0.03, rtol=0.1)
    assert abs(float(np.mean(pos - true_pos))) < 0.0005
    # The same episode seed reads the same noise; another seed another.
    again, _, _ = _readings(cell, 5, 400)
    np.testing.assert_array_equal(again, pos)
    other, _, _ = _readings(cell, 6, 400)
    assert not np.array_equal(other, pos)
    # The world itself stays true: reading it does not move it.
    np.testing.assert_array_equal(world.joint_state()[0], true_pos)


def test_a_world_without_noise_reports_the_true_state(tmp_path: Path) -> None:
    world = SimWorld(BUNDLED)
    cell = SimCell(world, world_dir=BUNDLED)
    cell.reset(3)
    for got, true in zip(cell.joint_state(), world.joint_state(), strict=True):
        np.testing.assert_array_equal(got, true)


@pytest.mark.parametrize(
    ("noise", "field"),
    [
        ({"position_std": -0.001}, r"robot\.joint_state_noise\.position_std: must be within"),
        ({"velocity_std": 50.0}, r"robot\.joint_state_noise\.velocity_std: must be within"),
        ({"position_std": "small"}, r"robot.joint_state_noise.position_std"),
        ({"position": 0.001}, r"robot.joint_state_noise: unknown key"),
    ],
)
def test_bad_noise_is_refused_naming_the_field(tmp_path: Path, noise: object, field: str) -> None:
    with pytest.raises(WorldError, match=field) as err:
        load_world_config(_world(tmp_path, noise))
    assert "world.yaml" in str(err.value)


def _motion(q: np.ndarray, qd: np.ndarray) -> JointMotion:
    t = np.arange(q.shape[0]) * 0.002
    return JointMotion(t=t, q=q, qd=qd, q_cmd=q, cmd_t=t, cmd_q=q, joint_names=("a", "b", "c"))


def test_reading_noise_is_measured_through_the_motion() -> None:
    """Fast excitation-like motion at 500 Hz plus white noise (and 14-bit encoder steps): the estimate
    finds the noise, not the motion; without noise it finds almost nothing."""
    rng = np.random.default_rng(0)
    t = np.arange(4000)[:, None] * 0.002
    freq = np.array([0.7, 1.3, 2.1])
    q = 0.6 * np.sin(2 * np.pi * freq * t)
    qd = 0.6 * 2 * np.pi * freq * np.cos(2 * np.pi * freq * t)
    pos_std, vel_std = reading_noise(_motion(q, qd))
    assert pos_std < 2e-6 and vel_std < 2e-5
    noisy_q = q + rng.normal(0.0, 0.0005, q.shape)
    noisy_qd = qd + rng.normal(0.0, 0.005, qd.shape)
    pos_std, vel_std = reading_noise(_motion(noisy_q, noisy_qd))
    assert pos_std == pytest.approx(0.0005, rel=0.08) and vel_std == pytest.approx(0.005, rel=0.08)
    step = 2 * np.pi / 2**14
    quantised = np.round(noisy_q / step) * step
    pos_std, _ = reading_noise(_motion(quantised, noisy_qd))
    assert pos_std == pytest.approx(np.hypot(0.0005, step / np.sqrt(12)), rel=0.08)
