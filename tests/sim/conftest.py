"""Fixtures for the r2s2r_sim core tests (no ROS)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import yaml  # noqa: E402
from r2s2r_sim.worlds import WORLDS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHARED_ROBOTS = REPO.parent / "shared" / "conformance" / "robots"
TEST_WORLDS = REPO / "tests" / "worlds"
BUNDLED = WORLDS["tabletop-pick-v1"]


@pytest.fixture
def world_copy(tmp_path: Path) -> Path:
    """A writable copy of the bundled world folder."""
    dst = tmp_path / "world"
    shutil.copytree(BUNDLED, dst)
    return dst


def edit_yaml(world_dir: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """Load world.yaml, apply ``edit(data)`` in place, write it back; returns the world.yaml path."""
    path = world_dir / "world.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
