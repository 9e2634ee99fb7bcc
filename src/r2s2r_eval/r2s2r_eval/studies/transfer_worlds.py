"""The real-to-sim ablation's training world: the identified world and its variations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml
from r2s2r_sim.paths import config_dir
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_eval.studies.emulated_capture import reconstruct_emulated_world

__all__ = ["DEFAULT_VARIATIONS", "make_real2sim_world", "real2sim_variations"]

DEFAULT_VARIATIONS = config_dir() / "variations.yaml"


def make_real2sim_world(
    work: Path,
    profile: Path,
    progress: Callable[[str], None] = print,
    *,
    template: str = "tabletop-pick-v1",
    progress_bars: bool = False,
) -> Path:
    """Capture the emulated hardware in ``template``'s scene, identify a world with ``real2sim``.

    Skipped if ``work/world`` exists.  ``progress_bars``: the capture's and identification's progress.
    """
    shown = {"progress": progress, "progress_bars": progress_bars}
    world, _ = reconstruct_emulated_world(work, profile=profile, world=template, intrinsics_views=8, **shown)
    return world


def real2sim_variations(world: Path, out: Path, base: Path = DEFAULT_VARIATIONS) -> Path:
    """``base`` variations for a real2sim world: existing colour targets, a wider bin keep-out."""
    doc = yaml.safe_load(base.read_text(encoding="utf-8"))
    model = SimWorld(world).model
    geoms = {model.geom(i).name for i in range(model.ngeom)}
    mats = {model.material(i).name for i in range(model.nmat)}
    wanted = ["cube_geom", "table_mat", "table_top", "bin_mat", "object_0_floor"]
    doc["appearance"]["color_targets"] = [t for t in wanted if t in geoms | mats]
    textures = doc["appearance"].get("texture_targets", [])
    doc["appearance"]["texture_targets"] = [t for t in textures if t in mats]
    # The camera is calibrated (ChArUco extrinsics: ~1 mm and ~0.1 deg on the emulated hardware), so its
    # viewpoint axis spans a few times that uncertainty, not the bundled world's +-2 cm / +-1.7 deg, which
    # stands for a camera nobody calibrated.  A policy then need not infer the viewpoint from the scene.
    doc["camera"].update(position_jitter=0.005, rotation_jitter=0.005, fovy_jitter=0.5)
    # The reconstructed bin sits within a few cm of the bundled one: widen its keep-out rectangle.
    for rect in doc.get("clutter", {}).get("keep_out", []):
        if rect["name"] == "bin":
            rect["x"], rect["y"] = [0.14, 0.38], [0.25, 0.50]
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out
