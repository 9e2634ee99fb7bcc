"""The ``variations.yaml`` that ``r2s2r world new`` writes beside its world.

A new world's scene is scaled to its arm (:mod:`r2s2r_sim.authoring.layout`), so the package's
``config/variations.yaml`` (the bundled arm's cube region and bin) would draw the cube where the new arm
may not reach, and keep distractors off a bin that is not there.  The world's own file is the package's
axes with the cube region, the keep-out areas and the arm's joints of this world; every sweep and study
reads a world's own file first (:func:`r2s2r_sim.worlds.default_variations_file`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from r2s2r_sim.authoring.layout import SceneLayout
from r2s2r_sim.paths import config_dir

__all__ = ["world_variations", "write_variations"]

# Half the bin's outer width (scene.xml) and the cube's half diagonal (m): the keep-outs grow by these.
_BIN_HALF = 0.08
_CUBE_HALF_DIAG = 0.03
# Gap (m) kept around the robot's base beyond its measured radius.
_BASE_GAP = 0.01


def _span(lo: float, hi: float) -> list[float]:
    return [round(lo, 4), round(hi, 4)]


def world_variations(
    scene: SceneLayout, mount: tuple[float, float], base_radius: float, arm_joints: Sequence[str]
) -> dict[str, object]:
    """The package's variation axes moved to ``scene`` (world frame, m).

    Args:
        scene: the new world's cube region and bin.
        mount: the robot's mount (x, y) on the table.
        base_radius: the robot base's horizontal radius about the mount.
        arm_joints: the arm joints the robot-state axis offsets.
    """
    data = yaml.safe_load((config_dir() / "variations.yaml").read_text(encoding="utf-8"))
    data["objects"]["x"] = _span(*scene.cube_x)
    data["objects"]["y"] = _span(*scene.cube_y)
    bx, by = scene.bin_xy
    base = base_radius + _BASE_GAP
    data["clutter"]["keep_out"] = [
        {
            "name": "bin",
            "x": _span(bx - _BIN_HALF, bx + _BIN_HALF),
            "y": _span(by - _BIN_HALF, by + _BIN_HALF),
        },
        {
            "name": "robot_base",
            "x": _span(mount[0] - base, mount[0] + base),
            "y": _span(mount[1] - base, mount[1] + base),
        },
        {
            "name": "cube_start",
            "x": _span(scene.cube_x[0] - _CUBE_HALF_DIAG, scene.cube_x[1] + _CUBE_HALF_DIAG),
            "y": _span(scene.cube_y[0] - _CUBE_HALF_DIAG, scene.cube_y[1] + _CUBE_HALF_DIAG),
        },
    ]
    data["robot_state"]["joints"] = list(arm_joints)
    return data


def write_variations(
    path: Path, scene: SceneLayout, mount: tuple[float, float], base_radius: float, arm_joints: Sequence[str]
) -> Path:
    """Write :func:`world_variations` to ``path`` with a header that says where its figures come from."""
    header = (
        "# Variation defaults of this world (schema: the package's config/variations.yaml), written by\n"
        "# `r2s2r world new`: the cube is drawn inside the arm's tool-down reach and the keep-outs are this\n"
        "# world's bin, cube region and robot base.  Sweeps and studies of this world read this file first.\n"
    )
    text = header + yaml.safe_dump(
        world_variations(scene, mount, base_radius, arm_joints), sort_keys=False, default_flow_style=None
    )
    path.write_text(text, encoding="utf-8")
    return path
