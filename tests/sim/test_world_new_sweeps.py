"""Whole sweeps on worlds that `r2s2r world new` makes from the conformance arms: the reference policy in a
10-variation sweep with the world's own variations.yaml (what `r2s2r sweep` reads by default)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED_ROBOTS

pytestmark = [
    pytest.mark.study,
    pytest.mark.timeout(1200),  # two 10-episode sweeps: about 4 min each on 2 shared cores
    pytest.mark.skipif(not SHARED_ROBOTS.is_dir(), reason=f"conformance robots not found at {SHARED_ROBOTS}"),
]

# The conformance arms with a gripper (Gen3 and the UR5e description have none: nothing to pick with).
ARMS = {"ufactory_xarm7": "ufactory_xarm7/xarm7.xml", "trs_so_arm100": "trs_so_arm100/so_arm100.xml"}


def _r2s2r(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "r2s2r_sim.cli.main", *args], check=True, capture_output=True)


@pytest.mark.parametrize("arm", sorted(ARMS))
def test_reference_policy_solves_a_sweep_of_the_new_world(arm: str, tmp_path: Path) -> None:
    out = tmp_path / "world"
    _r2s2r("world", "new", "--robot", str(SHARED_ROBOTS / ARMS[arm]), "--out", str(out))
    assert (out / "variations.yaml").is_file()
    rows = tmp_path / "sweep.csv"
    _r2s2r(
        "sweep", "--world", str(out), "--policy", "auto", "-n", "10", "--workers", "2",
        "--results", str(tmp_path / "sweep.sqlite"), "--export", str(rows), "--quiet",
    )  # fmt: skip
    outcomes = [(r["success"], r["reason"]) for r in csv.DictReader(rows.open())]
    assert len(outcomes) == 10
    assert sum(s == "true" for s, _ in outcomes) >= 8, outcomes
