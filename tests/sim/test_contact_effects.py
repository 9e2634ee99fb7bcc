"""The emulated cell's contacts: solver settings, rounded unevenly weighted objects, soft finger pads."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from r2s2r_sim.hardware.contact_effects import rounded_box
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.paths import config_dir
from scipy.spatial import ConvexHull

PROFILES = config_dir() / "emulated_hardware"


def _arm(tmp_path: Path, text: str) -> EmulatedArm:
    path = tmp_path / "profile.yaml"
    path.write_text((PROFILES / "ideal_profile.yaml").read_text() + "\n" + text)
    return EmulatedArm("tabletop-pick-v1", load_hardware_profile(path), seed=2)


def test_rounded_box_hull() -> None:
    half, r = np.array([0.02, 0.03, 0.01]), 0.004
    verts = rounded_box(half, r)
    np.testing.assert_allclose(verts.max(axis=0), half)
    np.testing.assert_allclose(verts.min(axis=0), -half)
    corner = np.sum(half)  # the sharp corner's extent along (1, 1, 1)
    rounded = (verts @ np.ones(3)).max()
    expected = np.sum(half - r) + r * np.sqrt(3)
    assert expected - 0.05 * r < rounded <= expected + 1e-12 and rounded < corner  # inscribed sampling
    box_volume = 8 * np.prod(half)
    assert 0.95 * box_volume < ConvexHull(verts).volume < box_volume


def test_contacts_section_edits_the_cell(tmp_path: Path) -> None:
    arm = _arm(
        tmp_path,
        "contacts:\n"
        "  cone: pyramidal\n  impratio: 7\n"
        "  geoms: {left_finger_geom: {solref: [0.03, 0.9], solimp: [0.7, 0.9, 0.003, 0.5, 2]}}\n"
        "  objects: {cube: {rounded_edge_m: 0.003, com_offset_m: [0.003, 0.0, -0.002]}}\n",
    )
    plain = EmulatedArm("tabletop-pick-v1", load_hardware_profile(PROFILES / "ideal_profile.yaml"), seed=2)
    m, p = arm.world.model, plain.world.model
    assert m.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL and p.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    assert m.opt.impratio == 7
    np.testing.assert_allclose(m.geom("left_finger_geom").solref, [0.03, 0.9])
    np.testing.assert_allclose(m.geom("left_finger_geom").solimp, [0.7, 0.9, 0.003, 0.5, 2])
    np.testing.assert_allclose(m.geom("right_finger_geom").solref, p.geom("right_finger_geom").solref)
    assert m.geom("cube_geom").type == mujoco.mjtGeom.mjGEOM_MESH
    np.testing.assert_allclose(m.body("cube").mass, p.body("cube").mass)  # the same part, weighed
    np.testing.assert_allclose(m.body("cube").ipos, [0.003, 0.0, -0.002], atol=1e-9)
    weight = m.geom("cube_weight")
    assert weight.contype == 0 and weight.conaffinity == 0 and weight.rgba[3] == 0
    # the rounded cube still rests on the table after settling
    arm.advance(500)
    z = arm.world.data.body("cube").xpos[2]
    assert z == pytest.approx(plain.world.data.body("cube").xpos[2], abs=2e-3)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("contacts: {cone: round}", r"contacts\.cone: must be one of"),
        ("contacts: {geoms: {pad: {solref: [0.02, 1]}}}", r"contacts\.geoms\.pad: no geom 'pad'"),
        (
            "contacts: {geoms: {left_finger_geom: {solimp: [0.99, 0.9, 0.001, 0.5, 2]}}}",
            r"contacts\.geoms\.left_finger_geom\.solimp",
        ),
        ("contacts: {objects: {cube: {rounded_edge_m: 0.05}}}", r"contacts\.objects\.cube\.rounded_edge_m"),
        ("contacts: {objects: {ball: {rounded_edge_m: 0.001}}}", r"contacts\.objects\.ball: no body 'ball'"),
        ("contacts: {friction: 1}", r"contacts: unknown key"),
    ],
)
def test_bad_contact_values_are_refused_naming_the_field(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(HardwareProfileError, match=match):
        _arm(tmp_path, text)
