"""The real-to-sim ablation's training world: the identified world and its variations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np
import yaml
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_eval.studies.closed_loop import DEFAULT_VARIATIONS
from r2s2r_eval.studies.emulated_capture import reconstruct_emulated_world

__all__ = ["DEFAULT_VARIATIONS", "make_real2sim_world", "real2sim_variations", "target_footprint"]


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


def target_footprint(sim: SimWorld) -> tuple[str, list[float], list[float]]:
    """The task target's body and its collision geoms' horizontal extent, ``(body, [x0, x1], [y0, y1])`` (m).

    The bin of a reconstructed world is wherever the capture found it, so a keep-out around it is measured
    in that world, not carried over from the template's.
    """
    model, data = sim.model, mujoco.MjData(sim.model)
    mujoco.mj_forward(model, data)
    site = sim.config.task.target_site
    body = int(model.site_bodyid[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)])
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
    points = [
        (model.geom_aabb[g, :3] + corners * model.geom_aabb[g, 3:]) @ data.geom_xmat[g].reshape(3, 3).T
        + data.geom_xpos[g]
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) == body and (model.geom_contype[g] or model.geom_conaffinity[g])
    ]
    if not points:
        raise ValueError(f"task.target_site {site!r}: its body has no collision geom")
    xy = np.concatenate(points)[:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    return (
        model.body(body).name,
        [round(float(lo[0]), 4), round(float(hi[0]), 4)],
        [
            round(float(lo[1]), 4),
            round(float(hi[1]), 4),
        ],
    )


def real2sim_variations(world: Path, out: Path, base: Path = DEFAULT_VARIATIONS) -> Path:
    """``base`` variations for a real2sim world: its own colour targets and bin keep-out, a calibrated camera.

    ``base`` is the template world's file: its cube region and arm axes hold, but names and the bin's
    place are the reconstruction's.
    """
    doc = yaml.safe_load(base.read_text(encoding="utf-8"))
    sim = SimWorld(world)
    model = sim.model
    bin_body, bin_x, bin_y = target_footprint(sim)
    geoms = {model.geom(i).name for i in range(model.ngeom)}
    mats = {model.material(i).name for i in range(model.nmat)}
    # A reconstructed bin has no material of its own: its floor geom carries its colour.
    wanted = ["cube_geom", "table_mat", "table_top", "bin_mat" if "bin_mat" in mats else f"{bin_body}_floor"]
    doc["appearance"]["color_targets"] = [t for t in wanted if t in geoms | mats]
    textures = doc["appearance"].get("texture_targets", [])
    doc["appearance"]["texture_targets"] = [t for t in textures if t in mats]
    # The camera is calibrated (ChArUco extrinsics: ~1 mm and ~0.1 deg on the emulated hardware), so its
    # viewpoint axis spans a few times that uncertainty, not the bundled world's +-2 cm / +-1.7 deg, which
    # stands for a camera nobody calibrated.  A policy then need not infer the viewpoint from the scene.
    doc["camera"].update(position_jitter=0.005, rotation_jitter=0.005, fovy_jitter=0.5)
    for rect in doc.get("clutter", {}).get("keep_out", []):
        if rect["name"] == "bin":
            rect["x"], rect["y"] = bin_x, bin_y
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out
