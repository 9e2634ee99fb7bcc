"""The SO-ARM100 profile at its servos' datasheet values runs on the world `world new` makes from the arm."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.learning.demo_expert import PrivilegedExpert
from r2s2r_sim.cells.emulated_cell import EmulatedCell
from r2s2r_sim.cli.main import main as r2s2r_main
from r2s2r_sim.paths import config_dir

ROBOT = SHARED / "conformance/robots/trs_so_arm100/so_arm100.xml"
PROFILE = config_dir() / "emulated_hardware/so_arm100_profile.yaml"


@pytest.fixture(scope="module")
def so_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not ROBOT.is_file():
        pytest.skip(f"conformance robot not found at {ROBOT}")
    out = tmp_path_factory.mktemp("so_arm100") / "world"
    assert r2s2r_main(["world", "new", "--robot", str(ROBOT), "--out", str(out)]) == 0
    return out


def test_the_datasheet_unit_is_picked_on_and_reads_12_bit_encoders(so_world: Path) -> None:
    with EpisodeRunner(EmulatedCell(so_world, PROFILE)) as runner:
        result = runner.run(PrivilegedExpert(runner.world), 0, control_rate_hz=10.0, camera_rate_hz=1e-3)
        positions, _, _ = runner.cell.joint_state()
    assert result.success, result.reason
    arm = [runner.world.joint_names.index(n) for n in runner.world.arm_joint_names]
    counts = np.asarray(positions)[arm] * 4096 / (2 * math.pi)
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-6)  # whole counts of the 12-bit encoder
