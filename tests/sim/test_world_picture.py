"""The ``world check`` picture: the tool frame, the task object and its target in view, and a legend."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from r2s2r_sim.authoring.world_picture import AXIS_COLOURS, OBJECT_COLOUR, TARGET_COLOUR, draw_tool_frame
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

WINDOW = 30  # px around a mark searched for its colour
ABOVE = 90  # px above the object's mark searched for the arrow that points down at it


def _near(image: np.ndarray, mark: tuple[int, int] | None, colour: tuple[float, ...], above: int = 0) -> int:
    """How many pixels within WINDOW of ``mark`` (and ``above`` px higher) have ``colour``'s hue."""
    assert mark is not None
    col, row = mark
    h, w = image.shape[:2]
    assert 0 <= col < w and 0 <= row < h, f"{mark} is outside the {w}x{h} picture"
    rows = slice(max(0, row - WINDOW - above), row + WINDOW)
    patch = image[rows, max(0, col - WINDOW) : col + WINDOW].astype(float)
    want = np.asarray(colour[:3]) / np.linalg.norm(colour[:3])
    norm = np.linalg.norm(patch, axis=2, keepdims=True)
    cosine = (patch / np.maximum(norm, 1e-9)) @ want
    return int(((cosine > 0.97) & (norm[..., 0] > 80)).sum())


@pytest.mark.parametrize("world", ["tabletop-pick-v1", "tabletop-push-v1"])
def test_picture_has_a_legend_and_shows_the_tool_frame_object_and_target(world: str, tmp_path: Path) -> None:
    sim = SimWorld(world_path(world))
    sim.reset(0)
    task = sim.config.task
    assert task is not None
    picture = draw_tool_frame(sim, tmp_path / "check.png")
    image = cv2.cvtColor(cv2.imread(str(tmp_path / "check.png")), cv2.COLOR_BGR2RGB)
    labels = [label for label, _, _ in picture.legend]
    assert labels[:3] == ["tool frame x", "tool frame y (finger axis)", "tool frame z (approach)"]
    assert labels[3:] == [f"task object {task.object_body!r}", f"target {task.target_site!r}"]
    for label, colour, (col, row) in picture.legend:
        assert tuple(image[row, col]) == colour, label  # each swatch is drawn in its mark's colour
        text = image[row - 6 : row + 7, col + 12 : col + 150]
        assert (text.min(axis=2) > 150).sum() > 10, f"no text beside the swatch of {label!r}"
    # Each mark's colour is drawn where its point lands in the image: the projection and the drawing agree.
    assert _near(image, picture.marks["tool frame"], AXIS_COLOURS[0]) > 10
    assert _near(image, picture.marks["task object"], OBJECT_COLOUR, above=ABOVE) > 20
    assert _near(image, picture.marks["target"], TARGET_COLOUR) > 20
