"""The real-to-sim ablation's training variations follow the identified world, wherever its bin is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from r2s2r_eval.studies.transfer_worlds import DEFAULT_VARIATIONS, real2sim_variations, target_footprint
from r2s2r_sim.variations.config import load_variation_config
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path


def _world_with_bin_at(tmp_path: Path, x: float, y: float) -> Path:
    """The bundled pick world with its bin moved to (x, y) on the table, as a reconstruction may find it."""
    out = tmp_path / "world"
    shutil.copytree(world_path("tabletop-pick-v1"), out)
    scene = out / "scene.xml"
    text = scene.read_text(encoding="utf-8")
    bundled = '<body name="bin" pos="0.25 0.38 0.75">'
    assert bundled in text
    scene.write_text(text.replace(bundled, f'<body name="bin" pos="{x} {y} 0.75">'))
    return out


def test_target_footprint_is_the_bins_collision_extent() -> None:
    body, xs, ys = target_footprint(SimWorld(world_path("tabletop-pick-v1")))
    assert body == "bin"
    assert xs == [0.17, 0.33] and ys == [0.3, 0.46]  # scene.xml: centre (0.25, 0.38), outer half width 8 cm


def test_bin_keep_out_follows_the_identified_bin(tmp_path: Path) -> None:
    """Distractors stay off the bin the capture found, not off the template's bin 30 cm away."""
    world = _world_with_bin_at(tmp_path, 0.05, 0.15)
    out = real2sim_variations(world, tmp_path / "variations.yaml", base=DEFAULT_VARIATIONS)
    zones = {z.name: z for z in load_variation_config(out).clutter.keep_out}
    assert zones["bin"].x == pytest.approx((0.05 - 0.08, 0.05 + 0.08))
    assert zones["bin"].y == pytest.approx((0.15 - 0.08, 0.15 + 0.08))
    doc = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert "bin_mat" in doc["appearance"]["color_targets"]
    assert doc["camera"]["position_jitter"] == 0.005  # a calibrated camera, not the template's
