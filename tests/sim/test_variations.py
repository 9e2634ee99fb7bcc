"""Contract and behaviour tests of the variation engine (r2s2r_sim.variations); no ROS."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from conftest import BUNDLED, REPO
from r2s2r_sim.variations import (
    AXES,
    VariationConfig,
    VariationError,
    apply_variation,
    for_world,
    initial_state_offsets,
    load_variation_config,
    make_world,
    sample_sweep,
    sample_variation,
    sweep_variation,
)
from r2s2r_sim.variations.clutter import BODY_PREFIX, distractors, footprint_radius, place
from r2s2r_sim.variations.config import (
    AXIS_NAMES,
    Axis,
    ClutterShape,
    ContactVariationConfig,
    DynamicsVariationConfig,
    ParameterRange,
    SensorVariationConfig,
)
from r2s2r_sim.variations.engine import dimension_names, sobol_points
from r2s2r_sim.world.sim_world import SimWorld
from scipy.stats import qmc

YAML = REPO / "config" / "variations.yaml"
# The shipped file leaves robot_state.joints empty: for_world fills in the bundled world's arm joints.
CONFIG = for_world(load_variation_config(YAML), BUNDLED)
# At least one distractor, so that the clutter axis alone always changes the model; the dynamics axis (off
# in the shipped file) on, with ranges as a reconstructed world's file gives them.
DYNAMICS = DynamicsVariationConfig(
    enabled=True,
    parameters=(
        ParameterRange(name="shoulder_pan/kp", range=(300.0, 500.0)),
        ParameterRange(name="elbow/armature", range=(0.05, 0.2)),
        ParameterRange(name="wrist_1/kv", range=(2.0, 6.0)),
        ParameterRange(name="command_delay_s", range=(0.0, 0.02)),
    ),
)
CONFIG_NONEMPTY = dataclasses.replace(
    CONFIG,
    clutter=dataclasses.replace(CONFIG.clutter, count=(1, 4)),
    dynamics=DYNAMICS,
    sensor=SensorVariationConfig(enabled=True),
    contact=ContactVariationConfig(enabled=True, geoms=("left_finger_geom", "right_finger_geom")),
)


@pytest.fixture(scope="module")
def base_world() -> SimWorld:
    return SimWorld(BUNDLED)


def _finite_rollout(world: SimWorld, steps: int = 100) -> None:
    world.reset(0)
    world.step(steps)
    assert np.all(np.isfinite(world.state_vector()))


# ------------------------------------------------------------------------------------------- registry


def test_registry_holds_every_axis_and_applies_them_in_config_order() -> None:
    order = ("appearance", "objects", "clutter", "physics", "robot_state", "camera")
    order += ("dynamics", "sensor", "contact")
    assert set(AXES) == set(AXIS_NAMES) and AXIS_NAMES == order
    assert CONFIG.enabled_axes() == order[:-3]  # dynamics, sensor, contact: off unless a config turns them on
    assert CONFIG_NONEMPTY.enabled_axes() == order
    assert tuple(n.split(".")[0] for n in dimension_names(CONFIG_NONEMPTY)) == tuple(
        a for a in order for _ in AXES[a].dims(CONFIG_NONEMPTY.axis(a))
    )


def test_unknown_axis_is_refused_listing_valid() -> None:
    with pytest.raises(VariationError, match=r"unknown variation axis 'lighting' \(axes: \['appearance'"):
        CONFIG.axis("lighting")
    with pytest.raises(VariationError, match="unknown variation axis"):
        CONFIG.only("lighting")


def test_axis_subclass_with_unknown_name_fails_at_definition() -> None:
    with pytest.raises(TypeError, match="must be one of the VariationConfig axes"):

        class _Bogus(Axis):  # pyright: ignore[reportUnusedClass]
            name = "bogus"

    with pytest.raises(TypeError, match="already registered"):

        class _Twice(Axis):  # pyright: ignore[reportUnusedClass]
            name = "physics"


# ----------------------------------------------------------------------------------- contract per axis


@pytest.mark.parametrize("axis", list(AXES))
def test_axis_alone_is_deterministic_and_changes_the_world(axis: str, base_world: SimWorld) -> None:
    cfg = CONFIG_NONEMPTY.only(axis)
    a, a_again, b = sample_variation(cfg, 11), sample_variation(cfg, 11), sample_variation(cfg, 12)
    assert a == a_again
    assert a.params and all(k.startswith(f"{axis}.") for k in a.params)
    assert not np.array_equal(a.vector(), b.vector())
    assert len(a.unit) == len(dimension_names(cfg))

    wa, wa_again, wb = make_world(BUNDLED, a), make_world(BUNDLED, a_again), make_world(BUNDLED, b)
    assert wa.world_hash == wa_again.world_hash
    if axis == "sensor":  # the effects act on rendered frames, the model stays the base one
        assert wa.world_hash == base_world.world_hash == wb.world_hash
        assert wa.sensors is not None and wa.sensors == wa_again.sensors != wb.sensors
        assert base_world.sensors is None
    elif axis == "robot_state":  # start offsets act at reset, the model stays the base one
        assert wa.world_hash == base_world.world_hash
        base_world.reset(0)
        wa.reset(0)
        assert not np.allclose(wa.joint_state()[0], base_world.joint_state()[0])
    else:
        assert wa.world_hash != base_world.world_hash
        assert wa.world_hash != wb.world_hash
    # The varied world loads, resets and steps.
    _finite_rollout(wa)
    wa.reset(3)
    s1 = wa.state_vector()
    wa_again.reset(3)
    np.testing.assert_array_equal(s1, wa_again.state_vector())


@pytest.mark.parametrize("axis", list(AXES))
def test_disabled_axis_contributes_nothing(axis: str, base_world: SimWorld) -> None:
    cfg = dataclasses.replace(CONFIG, **{axis: dataclasses.replace(CONFIG.axis(axis), enabled=False)})
    v = sample_variation(cfg, 5)
    assert not any(k.startswith(f"{axis}.") for k in v.params)
    assert not any(n.startswith(f"{axis}.") for n in dimension_names(cfg))
    alone = sample_variation(cfg.only(axis).only(), 5)  # everything disabled
    assert alone.params == {} and alone.unit == ()
    assert make_world(BUNDLED, alone).world_hash == base_world.world_hash


# --------------------------------------------------------------------------------------- determinism


_HASH_SCRIPT = """
import sys
from r2s2r_sim.variations import for_world, load_variation_config, make_world, sample_variation
v = sample_variation(for_world(load_variation_config(sys.argv[1]), sys.argv[3]), int(sys.argv[2]))
print(make_world(sys.argv[3], v).world_hash)
"""


def test_same_seed_same_hash_in_another_process() -> None:
    seed = 7
    here = make_world(BUNDLED, sample_variation(CONFIG, seed)).world_hash
    out = subprocess.run(
        [sys.executable, "-c", _HASH_SCRIPT, str(YAML), str(seed), str(BUNDLED)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip().splitlines()[-1] == here
    assert make_world(BUNDLED, sample_variation(CONFIG, seed + 1)).world_hash != here


def test_apply_variation_on_a_spec_matches_the_world(base_world: SimWorld) -> None:
    v = sample_variation(CONFIG, 21)
    spec = base_world._spec.copy()  # composed spec of the base world
    apply_variation(spec, v)
    model = spec.compile()
    assert model.nbody == make_world(BUNDLED, v).model.nbody


def test_sweep_variations_are_reproducible_one_by_one() -> None:
    for method in ("sobol", "random"):
        sweep = sample_sweep(CONFIG, 8, seed=3, method=method)
        assert [v.index for v in sweep] == list(range(8))
        again = sweep_variation(CONFIG, seed=3, index=5, method=method)
        assert again == sweep[5]
    assert sample_sweep(CONFIG, 4, seed=3) != sample_sweep(CONFIG, 4, seed=4)
    with pytest.raises(VariationError, match="unknown sampling method 'grid'"):
        sample_sweep(CONFIG, 4, seed=0, method="grid")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------- sampling


def test_sobol_sweep_hits_every_quartile_of_every_dimension() -> None:
    sweep = sample_sweep(CONFIG, 16, seed=0, method="sobol")
    units = np.array([v.unit for v in sweep])
    assert units.shape == (16, len(dimension_names(CONFIG)))
    quartiles = np.floor(units * 4).astype(int)
    for d, name in enumerate(dimension_names(CONFIG)):
        assert set(quartiles[:, d]) == {0, 1, 2, 3}, name
    # ... and so every range quartile of a realised parameter, e.g. the friction scale.
    lo, hi = CONFIG.physics.friction_scale
    q = {min(int((v.params["physics.friction_scale"] - lo) / (hi - lo) * 4), 3) for v in sweep}
    assert q == {0, 1, 2, 3}


def test_sobol_points_are_better_spread_than_random() -> None:
    cfg = CONFIG.only("physics", "camera")
    n = 64
    sobol = sobol_points(cfg, n, seed=0)
    random = np.array([v.unit for v in sample_sweep(cfg, n, seed=0, method="random")])
    assert qmc.discrepancy(sobol) < qmc.discrepancy(random)


# -------------------------------------------------------------------------------------------- clutter


def test_clutter_never_overlaps_geometrically() -> None:
    cfg = dataclasses.replace(CONFIG, clutter=dataclasses.replace(CONFIG.clutter, count=(6, 8)))
    for v in sample_sweep(cfg, 32, seed=1, method="random"):
        c = cfg.clutter
        items = distractors(c, v.axis_params("clutter"))
        assert 6 <= len(items) <= 8
        cube = (v.params["objects.x"], v.params["objects.y"])
        for i, d in enumerate(items):
            gap = d.radius + c.clearance
            assert c.region_x[0] <= d.x <= c.region_x[1] and c.region_y[0] <= d.y <= c.region_y[1]
            assert math.hypot(d.x - cube[0], d.y - cube[1]) >= gap + c.object_radius
            for z in c.keep_out:
                dx = max(z.x[0] - d.x, 0.0, d.x - z.x[1])
                dy = max(z.y[0] - d.y, 0.0, d.y - z.y[1])
                assert math.hypot(dx, dy) >= gap, z.name
            for e in items[:i]:
                assert math.hypot(d.x - e.x, d.y - e.y) >= gap + e.radius


def test_clutter_touches_only_the_table_at_start() -> None:
    cfg = dataclasses.replace(CONFIG, clutter=dataclasses.replace(CONFIG.clutter, count=(8, 8)))
    for seed in range(3):
        world = make_world(BUNDLED, sample_variation(cfg, seed))
        world.reset(seed)
        model, data = world.model, world.data
        table = model.geom("table_top").id
        clutter = {g for g in range(model.ngeom) if (model.geom(g).name or "").startswith(BODY_PREFIX)}
        assert len(clutter) == 8
        for c in data.contact[: data.ncon]:
            pair = {int(c.geom1), int(c.geom2)}
            if pair & clutter:
                assert pair - clutter == {table}, [model.geom(g).name for g in pair]
                assert c.dist > -1e-3
        _finite_rollout(world)


def test_clutter_that_cannot_fit_is_refused() -> None:
    c = dataclasses.replace(CONFIG.clutter, region_x=(0.25, 0.25), region_y=(0.38, 0.38), max_tries=5)
    with pytest.raises(VariationError, match=r"could not place distractor 1 of 2 in 5 tries"):
        place(c, 2, np.random.default_rng(0))
    assert footprint_radius(ClutterShape.BOX, 0.02) == pytest.approx(0.02 * math.sqrt(2))


# -------------------------------------------------------------------------------- reset-time behaviour


def test_start_offsets_and_object_pose_are_applied_at_reset(base_world: SimWorld) -> None:
    v = sample_variation(CONFIG.only("robot_state", "objects"), 4)
    world = make_world(BUNDLED, v)
    base_world.reset(0)
    home = base_world.joint_state()[0][:6]
    offsets = np.array(list(initial_state_offsets(v).values()))
    for seed in (0, 1):
        world.reset(seed)
        np.testing.assert_allclose(world.joint_state()[0][:6], home + offsets, atol=1e-12)
        pos, _ = world.body_pose("cube")
        np.testing.assert_allclose(pos[:2], [v.params["objects.x"], v.params["objects.y"]], atol=1e-12)
    assert initial_state_offsets(sample_variation(CONFIG.only("physics"), 4)) == {}


def test_camera_axis_moves_the_camera(base_world: SimWorld) -> None:
    v = sample_variation(CONFIG.only("camera"), 2)
    world = make_world(BUNDLED, v)
    cam = world.model.camera("realsense")
    base = base_world.model.camera("realsense")
    np.testing.assert_allclose(cam.pos - base.pos, [v.params[f"camera.d{a}"] for a in "xyz"], atol=1e-12)
    assert cam.fovy[0] - base.fovy[0] == pytest.approx(v.params["camera.dfovy"])
    angle = 2 * math.acos(min(1.0, abs(float(np.dot(cam.quat, base.quat)))))
    assert 0 < angle <= math.sqrt(3) * CONFIG.camera.rotation_jitter + 1e-9


def test_camera_axis_on_a_calibrated_camera_scales_its_focal_length(tmp_path: Path) -> None:
    """A camera written with sensor intrinsics (as real2sim writes one) ignores ``fovy``: the same change of
    view is a focal-length scale, and the principal point stays."""
    import shutil

    from r2s2r_sim.render.renderer import camera_intrinsics

    dst = tmp_path / "world"
    shutil.copytree(BUNDLED, dst)
    scene = dst / "scene.xml"
    text = scene.read_text()
    text = text.replace(
        '<camera name="realsense"',
        '<camera name="realsense" resolution="640 480" sensorsize="0.00192 0.00144" '
        'focalpixel="606.7 600.2" principalpixel="-2.2 -4.4"',
        1,
    ).replace('fovy="42.5"', "", 1)
    scene.write_text(text)
    base = camera_intrinsics(SimWorld(dst).model, "realsense", 640, 480)
    v = sample_variation(CONFIG.only("camera"), 2)
    k = camera_intrinsics(make_world(dst, v).model, "realsense", 640, 480)
    fovy = math.degrees(2 * math.atan(240 / base[1, 1])) + v.params["camera.dfovy"]
    # (MuJoCo keeps the intrinsics in single precision)
    assert k[1, 1] == pytest.approx(240 / math.tan(math.radians(fovy) / 2), rel=1e-6)
    assert k[0, 0] / k[1, 1] == pytest.approx(base[0, 0] / base[1, 1], rel=1e-6)
    np.testing.assert_allclose(k[:2, 2], base[:2, 2], atol=1e-4)


def test_physics_axis_scales_servo_gain_and_bias(base_world: SimWorld) -> None:
    v = sample_variation(CONFIG.only("physics"), 9)
    m, b = make_world(BUNDLED, v).model, base_world.model
    s = v.params["physics.gain_scale"]
    np.testing.assert_allclose(m.actuator_gainprm[:, 0], b.actuator_gainprm[:, 0] * s)
    np.testing.assert_allclose(m.actuator_biasprm[:, 1], b.actuator_biasprm[:, 1] * s)
    cube = b.body("cube").id
    assert m.body_mass[cube] == pytest.approx(b.body_mass[cube] * v.params["physics.mass_scale"])


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("lighting: {enabled: true}", r"unknown variation axis \['lighting'\]"),
        ("physics: {fricton_scale: [0.5, 1.0]}", r"physics: unknown field\(s\) \['fricton_scale'\]"),
        ("physics: {friction_scale: [1.2, 0.8]}", r"physics\.friction_scale: .*low <= high"),
        ("physics: {mass_scale: [0.0, 1.2]}", r"physics\.mass_scale: scales must be > 0"),
        ("clutter: {count: [-1, 3]}", r"clutter\.count: must not be negative"),
        ("clutter: {count: [1.5, 3]}", r"clutter\.count\[0\]: must be an integer"),
        ("clutter: {shapes: [cone]}", r"clutter\.shapes\[0\]: unknown value 'cone'"),
        (
            "clutter: {keep_out: [{name: bin, x: [1, 0], y: [0, 1]}]}",
            r"clutter\.keep_out\[0\]\.x: .*low <= high",
        ),
        ("camera: {fovy_jitter: -1}", r"camera\.fovy_jitter: must be in"),
        (
            "robot_state: {joints: [elbow], offset: [0.1, 0.2]}",
            r"robot_state\.offset: .*2 offsets and 1 joints",
        ),
        ("appearance: {enabled: yes please}", r"appearance\.enabled: must be true or false"),
        ("contact: {solimp_dmin: [0.8, 1.0]}", r"contact\.solimp_dmin: must lie in \(0, 1\)"),
        ("contact: {impratio: [0.5, 2]}", r"contact\.impratio: must be >= 1"),
        ("contact: {pyramidal_share: 1.5}", r"contact\.pyramidal_share: must lie in \[0, 1\]"),
        ("[1, 2]", r"<top level>: must be a mapping"),
        ("physics: {friction_scale: [", r"not valid YAML"),
    ],
)
def test_malformed_yaml_is_refused_naming_file_and_field(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad_variations.yaml"
    path.write_text(text)
    with pytest.raises(VariationError, match=r"bad_variations\.yaml: " + match):
        load_variation_config(path)


def test_missing_file_and_names_the_world_lacks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(VariationError, match="variations file not found"):
        load_variation_config(tmp_path / "none.yaml")
    cfg = dataclasses.replace(
        CONFIG, physics=dataclasses.replace(CONFIG.physics, friction_geoms=("cube_geom", "nope"))
    ).only("physics")
    with pytest.raises(VariationError, match=r"physics\.friction_geoms\[1\]: no geom 'nope'"):
        make_world(BUNDLED, sample_variation(cfg, 0))
    cfg = dataclasses.replace(CONFIG, camera=dataclasses.replace(CONFIG.camera, camera="wrist")).only(
        "camera"
    )
    with pytest.raises(VariationError, match=r"camera\.camera: no camera 'wrist'.*realsense"):
        make_world(BUNDLED, sample_variation(cfg, 0))


def test_default_config_equals_the_yaml_defaults() -> None:
    assert VariationConfig() == dataclasses.replace(load_variation_config(YAML), source=None)


def test_robot_state_defaults_to_the_world_arm_joints() -> None:
    arm = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
    assert CONFIG.robot_state.joints == arm
    offsets = initial_state_offsets(sample_variation(CONFIG.only("robot_state"), 3))
    assert set(offsets) == set(CONFIG.robot_state.joints)
    assert all(abs(v) <= 0.1 for v in offsets.values()) and len(set(offsets.values())) == 6


def test_contact_axis_softens_the_gripper_pads_and_sets_the_solver() -> None:
    on = dataclasses.replace(CONFIG, contact=ContactVariationConfig(enabled=True)).only("contact")
    cfg = for_world(on, BUNDLED)  # empty geoms: the colliding geoms that move with the gripper joints
    assert cfg.contact.geoms == ("left_finger_geom", "right_finger_geom")
    base = SimWorld(BUNDLED).model
    cones = set()
    for seed in range(6):
        v = sample_variation(cfg, seed)
        p = v.axis_params("contact")
        m = make_world(BUNDLED, v).model
        for name in cfg.contact.geoms:
            g = m.geom(name).id
            assert m.geom_solref[g, 0] == pytest.approx(p["solref_timeconst"])
            assert m.geom_solref[g, 1] == base.geom_solref[g, 1]  # its own damping ratio
            assert (
                m.geom_solimp[g, 0] == pytest.approx(p["solimp_dmin"])
                and m.geom_solimp[g, 1] >= p["solimp_dmin"]
            )
        cube = m.geom("cube_geom").id
        np.testing.assert_array_equal(m.geom_solref[cube], base.geom_solref[cube])  # only the pads
        assert m.opt.impratio == pytest.approx(p["impratio"]) and 1.0 <= p["impratio"] <= 10.0
        pyramidal = int(m.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
        assert pyramidal == bool(p["pyramidal"])
        cones.add(pyramidal)
    assert cones == {True, False}
    bad = dataclasses.replace(cfg, contact=dataclasses.replace(cfg.contact, geoms=("body:nope/0",)))
    with pytest.raises(VariationError, match=r"contact\.geoms\[0\]: no geom 'body:nope/0'"):
        make_world(BUNDLED, sample_variation(bad, 0))


def test_names_the_world_lacks_are_refused_before_any_episode() -> None:
    cfg = load_variation_config(YAML)
    bad = dataclasses.replace(
        cfg, appearance=dataclasses.replace(cfg.appearance, color_targets=("no_such_mat",))
    )
    with pytest.raises(VariationError, match="no_such_mat"):
        for_world(bad, BUNDLED)


def test_appearance_textures_are_drawn_from_the_choices() -> None:
    cfg = load_variation_config(REPO / "config" / "variations.yaml").only("appearance")
    seen = {}
    for seed in range(12):
        variation = sample_variation(cfg, seed)
        choice = cfg.appearance.textures[int(variation.params["appearance.table_mat.texture"])]
        world = make_world(BUNDLED, variation)
        texid = world.model.material("table_mat").texid[mujoco.mjtTextureRole.mjTEXROLE_RGB]
        assert (texid >= 0) == (choice != "none"), (seed, choice)
        seen[choice] = seen.get(choice, 0) + 1
    assert set(seen) == set(cfg.appearance.textures), seen


def test_unknown_texture_choice_is_refused(tmp_path) -> None:
    text = (
        (REPO / "config" / "variations.yaml")
        .read_text()
        .replace("textures: [none, checker, gradient]", "textures: [none, marble]")
    )
    path = tmp_path / "v.yaml"
    path.write_text(text)
    with pytest.raises(VariationError, match=r"appearance\.textures.*unknown \['marble'\]"):
        load_variation_config(path)


def test_dynamics_axis_sets_each_parameter_to_its_draw() -> None:
    v = sample_variation(CONFIG_NONEMPTY.only("dynamics"), 7)
    p = v.axis_params("dynamics")
    for entry in DYNAMICS.parameters:
        assert entry.range[0] <= p[entry.name] <= entry.range[1]
    world = make_world(BUNDLED, v)
    m = world.model
    prefix = world.config.robot.prefix
    servo = next(a for a in range(m.nu) if m.actuator_trnid[a, 0] == m.joint(prefix + "shoulder_pan").id)
    assert m.actuator_gainprm[servo, 0] == pytest.approx(p["shoulder_pan/kp"])
    assert m.actuator_biasprm[servo, 1] == pytest.approx(-p["shoulder_pan/kp"])
    assert m.dof_armature[m.jnt_dofadr[m.joint(prefix + "elbow").id]] == pytest.approx(p["elbow/armature"])
    wrist = next(a for a in range(m.nu) if m.actuator_trnid[a, 0] == m.joint(prefix + "wrist_1").id)
    assert -m.actuator_biasprm[wrist, 2] == pytest.approx(p["wrist_1/kv"])
    assert world.command_delay_s == pytest.approx(p["command_delay_s"])


def test_dynamics_axis_round_trips_through_yaml(tmp_path: Path) -> None:
    path = tmp_path / "variations.yaml"
    entries = [{"name": e.name, "range": list(e.range)} for e in DYNAMICS.parameters]
    path.write_text(yaml.safe_dump({"dynamics": {"enabled": True, "parameters": entries}}), encoding="utf-8")
    loaded = load_variation_config(path)
    assert loaded.dynamics == DYNAMICS
    assert sample_variation(loaded, 3).axis_params("dynamics") == sample_variation(
        dataclasses.replace(VariationConfig(), dynamics=DYNAMICS), 3
    ).axis_params("dynamics")


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ({"name": "elbow/stiffness", "range": [0, 1]}, r"dynamics\.parameters\[0\]\.name: must be"),
        ({"name": "elbow/kp", "range": [0, 1]}, r"elbow/kp: scales must be > 0"),
        ({"name": "elbow/armature", "range": [0.2, 0.1]}, r"low <= high"),
    ],
)
def test_bad_dynamics_entries_are_refused_naming_the_field(tmp_path: Path, entry: dict, match: str) -> None:
    path = tmp_path / "variations.yaml"
    path.write_text(yaml.safe_dump({"dynamics": {"parameters": [entry]}}), encoding="utf-8")
    with pytest.raises(VariationError, match=match):
        load_variation_config(path)
    cfg = CONFIG.only("dynamics")
    cfg = dataclasses.replace(
        cfg,
        dynamics=DynamicsVariationConfig(
            enabled=True, parameters=(ParameterRange(name="nope/kp", range=(1.0, 2.0)),)
        ),
    )
    with pytest.raises(VariationError, match=r"dynamics\.parameters\[0\]\.name: no joint 'nope'"):
        make_world(BUNDLED, sample_variation(cfg, 0))
