"""Perception frames: the object is rendered where its label says, and the trainer uses them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from r2s2r_eval.learning.perception_frames import (
    PerceptionFramesConfig,
    collect_perception_frames,
    load_perception_frames,
)
from r2s2r_eval.policies.reference.perception import segment_colour

CUBE_RGB = (0.9, 0.15, 0.1)  # scene.xml cube_geom


def test_labels_follow_the_rendered_object(tmp_path: Path) -> None:
    cfg = PerceptionFramesConfig(worlds=2, per_world=8, arm_at_start=1.0, image_width=192, image_height=144)
    collect_perception_frames(tmp_path / "pf", cfg)
    images, env = load_perception_frames(tmp_path / "pf")
    assert images.shape == (16, 144, 192, 3) and env.shape == (16, 5)
    # labels inside the world's object range, on the table
    assert np.all((env[:, 0] >= 0.35) & (env[:, 0] <= 0.55) & (env[:, 1] >= -0.15) & (env[:, 1] <= 0.05))
    assert np.allclose(np.hypot(env[:, 3], env[:, 4]), 1.0, atol=1e-5)
    # The red blob's image column follows the labelled y (the camera faces the arm): strongly correlated.
    cols, rows = [], []
    for img in images:
        v, u = np.nonzero(segment_colour(img, CUBE_RGB))
        assert u.size > 5
        cols.append(u.mean())
        rows.append(v.mean())
    assert abs(np.corrcoef(cols, env[:, 1])[0, 1]) > 0.9
    assert abs(np.corrcoef(rows, env[:, 0])[0, 1]) > 0.9
    meta = json.loads((tmp_path / "pf" / "meta.json").read_text())
    assert meta["frames"] == 16


def test_existing_frames_are_not_overwritten(tmp_path: Path) -> None:
    cfg = PerceptionFramesConfig(worlds=1, per_world=2)
    collect_perception_frames(tmp_path / "pf", cfg)
    with pytest.raises(ValueError, match="exists already"):
        collect_perception_frames(tmp_path / "pf", cfg)
    with pytest.raises(ValueError, match="missing"):
        load_perception_frames(tmp_path / "nothing")


HANDLE_RGB = (0.95, 0.8, 0.1)  # tabletop_drawer scene.xml handle_mat


def test_a_drawer_is_drawn_anywhere_along_its_slide(tmp_path: Path) -> None:
    """A jointed task object: frames set its joint across the joint's range, and the label follows it."""
    cfg = PerceptionFramesConfig(
        world="tabletop-drawer-v1",
        worlds=1,
        per_world=10,
        arm_at_start=1.0,
        image_width=192,
        image_height=144,
    )
    collect_perception_frames(tmp_path / "pf", cfg)
    images, env = load_perception_frames(tmp_path / "pf")
    # The slide (range 0 to 0.17 m along world x) moves only x; the drawer body sits at x 0.36 when shut.
    assert np.all((env[:, 0] >= 0.36 - 1e-6) & (env[:, 0] <= 0.53 + 1e-6))
    assert np.ptp(env[:, 0]) > 0.08
    assert np.ptp(env[:, 1]) < 1e-6 and np.ptp(env[:, 2]) < 1e-6
    # The yellow handle moves in the image with the labelled opening.
    rows = []
    for img in images:
        v, _ = np.nonzero(segment_colour(img, HANDLE_RGB))
        assert v.size > 5
        rows.append(v.mean())
    assert abs(np.corrcoef(rows, env[:, 0])[0, 1]) > 0.9
