"""Naming the task's object and target among the reconstructed objects.

A scene may show more than the task's two objects (a pen, tape, a sliver of depth noise at the table's
edge); the task object is the one most like the template's, not the smallest.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from r2s2r_capture.errors import ReconstructionError  # noqa: E402
from r2s2r_capture.real2sim.task_roles import pick_task, template_object_size  # noqa: E402
from r2s2r_capture.reconstruction.scene import PrimitiveKind, ReconstructedObject  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402


def _obj(
    name: str, size: tuple[float, float, float], kind: PrimitiveKind = PrimitiveKind.BOX
) -> ReconstructedObject:
    return ReconstructedObject(
        name=name,
        position=np.zeros(3),
        quat=np.array([1.0, 0.0, 0.0, 0.0]),
        size=np.array(size),
        aabb_size=np.array(size),
        color=(0.5, 0.5, 0.5),
        n_points=100,
        primitive=kind,
        box_fit=0.9,
    )


BIN = _obj("object_0", (0.16, 0.16, 0.055), PrimitiveKind.OPEN_BOX)
CUBE = _obj("object_1", (0.041, 0.039, 0.045))
SLIVER = _obj("object_2", (0.086, 0.030, 0.012))  # smaller in volume than the cube
PEN = _obj("object_3", (0.14, 0.012, 0.012))


def test_the_object_most_like_the_templates_is_the_task_object_not_the_smallest() -> None:
    like = np.array([0.04, 0.04, 0.04])
    assert pick_task([BIN, CUBE, SLIVER, PEN], marker=False, like=like) == ("object_1", "object_0")
    # Without the template's size the old rule stands: the smallest object.
    assert pick_task([BIN, CUBE, SLIVER, PEN], marker=False, like=None)[0] == "object_3"
    # The extents are compared sorted: a cube turned on its side is the same cube.
    turned = _obj("object_4", (0.045, 0.041, 0.039))
    assert pick_task([BIN, SLIVER, turned], marker=False, like=like)[0] == "object_4"
    # A marker target: the object only.
    assert pick_task([SLIVER, CUBE], marker=True, like=like) == ("object_1", None)


def test_a_target_given_by_name_is_taken_and_an_unknown_one_refused() -> None:
    like = np.array([0.04, 0.04, 0.04])
    assert pick_task([BIN, CUBE, SLIVER], marker=False, like=like, target="object_2") == (
        "object_1",
        "object_2",
    )
    with pytest.raises(ReconstructionError, match="object_9"):
        pick_task([BIN, CUBE], marker=False, like=like, target="object_9")
    with pytest.raises(ReconstructionError, match="1 object"):
        pick_task([CUBE], marker=False, like=like)


def test_the_templates_task_object_size_is_read_from_its_collision_geoms() -> None:
    size = template_object_size(world_path("tabletop-pick-v1"), "cube")
    assert size is not None
    np.testing.assert_allclose(np.sort(size), [0.04, 0.04, 0.04], atol=0.002)
    assert template_object_size(world_path("tabletop-pick-v1"), "no_such_body") is None
