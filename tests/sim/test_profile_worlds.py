"""One hardware profile for every task world: the ``worlds`` section and how it resolves per world."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import PROFILES, profile_path
from r2s2r_sim.worlds import WORLDS

TASK_WORLDS = sorted(w for w in WORLDS if w.startswith("tabletop-"))


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_shipped_profiles_cover_every_bundled_task_world(name: str) -> None:
    profile = load_hardware_profile(profile_path(name))
    assert set(TASK_WORLDS) <= set(profile.worlds)
    push = profile.for_world("tabletop-push-v1")
    assert push.world == "tabletop-push-v1" and push.sha256 == profile.sha256
    assert set(push.objects) == {"puck", "target"}  # the pick world's cube and bin are gone
    assert "cube_geom" not in push.physics.geom_friction
    # What the unit is, whatever is on its table, stays the base's.
    assert push.physics.geom_friction["table_top"] == profile.physics.geom_friction["table_top"]
    assert push.physics.servos == profile.physics.servos and push.camera == profile.camera
    assert push.driver == profile.driver and push.arm == profile.arm and push.sensors == profile.sensors
    drawer = profile.for_world("tabletop-drawer-v1")
    assert drawer.physics.joints["drawer_slide"].damping == pytest.approx(9.5)
    assert drawer.physics.joints["elbow"] == profile.physics.joints["elbow"]
    assert not drawer.contacts.objects  # no free object to round
    assert profile.for_world("kitchen-v1") is profile


def _profile(tmp_path: Path, worlds: dict[str, Any]) -> Path:
    doc = yaml.safe_load(profile_path("ideal").read_text())
    doc["worlds"] = worlds
    path = tmp_path / "unit.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_world_variant_replaces_only_what_it_names(tmp_path: Path) -> None:
    path = _profile(
        tmp_path,
        {
            "tabletop-push-v1": {
                "objects": None,
                "physics.body_masses_kg": {"puck": 0.2},
                "physics.geom_friction.cube_geom": None,
                "physics.joints.elbow": {"damping": 3.0},
            }
        },
    )
    base = load_hardware_profile(path)
    push = base.for_world("tabletop-push-v1")
    assert not push.objects and dict(push.physics.body_masses_kg) == {"puck": 0.2}
    assert set(push.physics.geom_friction) == set(base.physics.geom_friction) - {"cube_geom"}
    assert push.physics.joints["elbow"].damping == 3.0 and push.physics.joints["elbow"].armature is None
    assert push.physics.joints["wrist_1"] == base.physics.joints["wrist_1"]
    arm = EmulatedArm("tabletop-push-v1", base, seed=1)
    assert arm.profile.world == "tabletop-push-v1"
    assert float(arm.world.model.body("puck").mass[0]) == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("worlds", "match"),
    [
        ({"tabletop-push-v1": {"nonsense.x": 1}}, r"worlds\.tabletop-push-v1\.nonsense\.x: not a section"),
        ({"tabletop-push-v1": {"world": "x"}}, r"worlds\.tabletop-push-v1\.world: not a section"),
        ({"tabletop-push-v1": 3}, r"worlds\.tabletop-push-v1: must be a mapping"),
        (
            {"tabletop-push-v1": {"objects": {"puck": {"pose": 3}}}},
            r"unit\.yaml \(worlds\.tabletop-push-v1\): objects\.puck\.pose: must be a mapping",
        ),
    ],
)
def test_bad_world_variants_name_the_variant(tmp_path: Path, worlds: dict[str, Any], match: str) -> None:
    with pytest.raises(HardwareProfileError, match=match):
        load_hardware_profile(_profile(tmp_path, worlds))


def test_a_variant_naming_what_its_world_lacks_is_refused(tmp_path: Path) -> None:
    path = _profile(tmp_path, {"tabletop-push-v1": {"physics.body_masses_kg": {"cube": 0.1}}})
    with pytest.raises(
        HardwareProfileError,
        match=r"physics\.body_masses_kg\.cube: no body 'cube' in world 'tabletop-push-v1'",
    ):
        EmulatedArm("tabletop-push-v1", load_hardware_profile(path))


def test_a_world_without_a_variant_is_refused(tmp_path: Path) -> None:
    path = _profile(tmp_path, {})
    with pytest.raises(
        HardwareProfileError,
        match=r"world: the profile is for 'tabletop-pick-v1', not for 'tabletop-push-v1'",
    ):
        EmulatedArm("tabletop-push-v1", load_hardware_profile(path))
