"""Render profiles: parsed and validated from world.yaml, and each knob really changes what is drawn."""

from __future__ import annotations

import re
from pathlib import Path

import mujoco
import numpy as np
import pytest
from conftest import BUNDLED, edit_yaml
from r2s2r_sim.errors import RenderError, WorldError
from r2s2r_sim.render.profile import FAST, FULL, RenderProfile
from r2s2r_sim.render.renderer import RgbdRenderer, TiledRenderer, tile_grid
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.world.sim_world import SimWorld

# A box hangs 1.5 m above a floor; a directional light at 45 degrees puts its shadow 1.5 m to +x, where a
# camera 3 m up looks straight down.  The box itself is outside the camera's view, so the image centre
# is the shadow (dark) with shadows on and lit floor with them off.
SHADOW_SCENE = """
<mujoco>
  <statistic extent="4" center="0.5 0 0.5"/>
  <visual>
    <global offwidth="160" offheight="120"/><quality shadowsize="1024"/>
    <headlight ambient="0.1 0.1 0.1" diffuse="0.1 0.1 0.1" specular="0 0 0"/>
  </visual>
  <asset><material name="floor_mat" rgba="0.8 0.8 0.8 1" specular="0" reflectance="0.2"/></asset>
  <worldbody>
    <light name="sun" directional="true" pos="0 0 5" dir="1 0 -1" castshadow="true" diffuse="0.6 0.6 0.6"
           specular="0 0 0"/>
    <geom name="floor" type="plane" size="3 3 0.1" material="floor_mat"/>
    <body name="box" pos="-0.5 0 1.5">
      <geom name="box_geom" type="box" size="0.4 0.4 0.4" rgba="1 0 0 1"/>
    </body>
    <camera name="top" pos="1 0 3" fovy="30"/>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def shadow_scene() -> tuple[mujoco.MjModel, mujoco.MjData]:
    model = mujoco.MjModel.from_xml_string(SHADOW_SCENE)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def _centre_brightness(rgb: np.ndarray) -> float:
    h, w = rgb.shape[:2]
    return float(rgb[h // 2 - 4 : h // 2 + 4, w // 2 - 4 : w // 2 + 4].mean())


def _where(world_dir: Path, field: str) -> str:
    return re.escape(f"{world_dir.resolve() / 'world.yaml'}: {field}")


# ------------------------------------------------------------------------------------------- parsing


def test_bundled_world_declares_full_and_fast() -> None:
    cfg = load_world_config(BUNDLED)
    assert cfg.render_profiles["full"] == FULL
    assert cfg.render_profiles["fast"] == FAST
    cam = cfg.cameras[0]
    assert cam.render_profile == "full"
    assert cfg.render_profile(cam) is cfg.render_profiles["full"]
    assert cfg.render_profile(cam, "fast").differs_from(FULL) == ["shadows", "reflections", "skybox"]


def test_world_file_profile_is_parsed_with_every_field(world_copy: Path) -> None:
    def edit(data: dict) -> None:  # type: ignore[type-arg]
        data["render_profiles"]["cheap"] = {
            "shadows": True,
            "shadow_size": 512,
            "reflections": False,
            "skybox": False,
            "max_lights": 1,
            "multisamples": 0,
            "width": 320,
            "height": 240,
        }
        data["cameras"][0]["render_profile"] = "cheap"

    edit_yaml(world_copy, edit)
    cfg = load_world_config(world_copy)
    cheap = cfg.render_profile(cfg.cameras[0])
    assert cheap == RenderProfile(
        name="cheap",
        shadows=True,
        shadow_size=512,
        reflections=False,
        skybox=False,
        max_lights=1,
        multisamples=0,
        width=320,
        height=240,
    )
    assert cheap.size(640, 480) == (320, 240)
    assert FULL.size(640, 480) == (640, 480)


@pytest.mark.parametrize(
    ("profile", "field", "message"),
    [
        ({"shadow_size": 1000}, "render_profiles.fast.shadow_size", r"power of two in \[64, 16384\].*1000"),
        ({"shadow_size": 32768}, "render_profiles.fast.shadow_size", "power of two"),
        ({"shadows": "no"}, "render_profiles.fast.shadows", "must be true or false"),
        ({"max_lights": 0}, "render_profiles.fast.max_lights", "must be >= 1"),
        ({"multisamples": 64}, "render_profiles.fast.multisamples", r"must be in \[0, 16\]"),
        ({"width": 320}, "render_profiles.fast.width", "give both width and height"),
        ({"width": 0, "height": 10}, "render_profiles.fast.width", "must be >= 1 px"),
        ({"shadow_size": 1.5}, "render_profiles.fast.shadow_size", "must be an integer"),
        ({"shadowz": False}, "render_profiles.fast", r"unknown key\(s\) \['shadowz'\]"),
    ],
)
def test_bad_profile_values_are_refused_naming_the_field(
    world_copy: Path,
    profile: dict,
    field: str,
    message: str,  # type: ignore[type-arg]
) -> None:
    edit_yaml(world_copy, lambda data: data["render_profiles"].__setitem__("fast", profile))
    with pytest.raises(WorldError, match=_where(world_copy, field) + ".*" + message):
        load_world_config(world_copy)


def test_camera_naming_an_unknown_profile_is_refused(world_copy: Path) -> None:
    edit_yaml(world_copy, lambda data: data["cameras"][0].__setitem__("render_profile", "pretty"))
    with pytest.raises(
        WorldError, match=_where(world_copy, "cameras[0].render_profile") + r".*'pretty'.*\['fast', 'full'\]"
    ):
        load_world_config(world_copy)


def test_run_choosing_an_unknown_profile_is_refused() -> None:
    cfg = load_world_config(BUNDLED)
    with pytest.raises(WorldError, match=r"render_profile: unknown render profile 'ultra'"):
        cfg.render_profile(cfg.cameras[0], "ultra")


def test_profiles_are_optional_and_default_to_the_builtins(world_copy: Path) -> None:
    def edit(data: dict) -> None:  # type: ignore[type-arg]
        del data["render_profiles"]
        del data["cameras"][0]["render_profile"]

    edit_yaml(world_copy, edit)
    cfg = load_world_config(world_copy)
    assert cfg.render_profile(cfg.cameras[0]) == FULL
    assert cfg.render_profile(cfg.cameras[0], "fast") == FAST


# --------------------------------------------------------------------------------- what is drawn


def test_fast_draws_no_shadow_where_full_does(shadow_scene: tuple[mujoco.MjModel, mujoco.MjData]) -> None:
    model, data = shadow_scene
    with RgbdRenderer(model, 160, 120, profile=FULL) as r:
        full, _ = r.render(data, "top")
    with RgbdRenderer(model, 160, 120, profile=FAST) as r:
        fast, _ = r.render(data, "top")
    # The floor outside the shadow is lit alike in both; the centre is in the box's shadow only in full.
    corner_full, corner_fast = float(full[:8, :8].mean()), float(fast[:8, :8].mean())
    assert abs(corner_full - corner_fast) < 20
    assert _centre_brightness(full) < 0.6 * _centre_brightness(fast)
    assert _centre_brightness(fast) > 0.8 * corner_fast


def test_profile_sets_the_scene_flags_and_context_and_restores_the_model(
    shadow_scene: tuple[mujoco.MjModel, mujoco.MjData],
) -> None:
    model, _ = shadow_scene
    profile = RenderProfile(
        name="t", shadows=False, shadow_size=256, reflections=False, skybox=False, multisamples=0
    )
    with RgbdRenderer(model, 160, 120, profile=profile) as r:
        flags = r._scene.flags
        assert not flags[mujoco.mjtRndFlag.mjRND_SHADOW]
        assert not flags[mujoco.mjtRndFlag.mjRND_REFLECTION]
        assert not flags[mujoco.mjtRndFlag.mjRND_SKYBOX]
        assert r._ctx is not None and r._ctx.shadowSize == 256 and r._ctx.offSamples == 0
    # The shadow map size and samples are borrowed from the model only while the context is made.
    assert model.vis.quality.shadowsize == 1024 and model.vis.global_.offwidth == 160
    with RgbdRenderer(model, 160, 120, profile=FULL) as r:
        assert r._ctx is not None and r._ctx.shadowSize == 1024
        assert r._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW]


def test_max_lights_drops_lights(shadow_scene: tuple[mujoco.MjModel, mujoco.MjData]) -> None:
    model, data = shadow_scene
    one = RenderProfile(name="one", shadows=False, max_lights=1)  # the headlight only
    with RgbdRenderer(model, 160, 120, profile=FAST) as r:
        lit, _ = r.render(data, "top")
    with RgbdRenderer(model, 160, 120, profile=one) as r:
        dim, _ = r.render(data, "top")
        assert r._scene.nlight == 1
    assert float(dim.mean()) < float(lit.mean()) - 20


def test_smaller_shadow_map_is_still_a_shadow(shadow_scene: tuple[mujoco.MjModel, mujoco.MjData]) -> None:
    model, data = shadow_scene
    with RgbdRenderer(model, 160, 120, profile=RenderProfile(name="s", shadow_size=256)) as r:
        rgb, _ = r.render(data, "top")
    assert _centre_brightness(rgb) < 0.6 * float(rgb[:8, :8].mean())


# ---------------------------------------------------------------------------------------- tiles


def test_tile_grid_is_nearly_square() -> None:
    assert tile_grid(1, 96, 72) == (1, 1)
    cols, rows = tile_grid(16, 96, 72)
    assert cols * rows >= 16 and abs(cols * 96 - rows * 72) <= 96
    with pytest.raises(RenderError, match="tiles: must be >= 1"):
        tile_grid(0, 96, 72)


@pytest.mark.parametrize("profile", [FAST, FULL], ids=["fast", "full"])
def test_tiles_match_separate_renders(profile: RenderProfile) -> None:
    """Each tile equals the view drawn alone, from several different states in one pass.

    Tolerance: colour within 2 levels (8-bit) everywhere with ``fast``.  With shadows, a handful of
    pixels on shadow edges (< 0.5 %; 16 of 6912 measured) land on the other side of the shadow map's
    depth comparison when the viewport moves, so there at most 0.5 % of pixels may differ by more.
    Depth agrees to 1e-4 m (float32 read-back of the same depth buffer).
    """
    world = SimWorld(BUNDLED)
    model = world.model
    cam = model.camera(world.camera_id("camera")).name
    datas = []
    for seed in range(5):
        world.reset(seed)
        d = mujoco.MjData(model)
        d.qpos[:] = world.data.qpos
        mujoco.mj_forward(model, d)
        datas.append(d)
    with RgbdRenderer(model, 96, 72, profile=profile) as single:
        alone = [single.render(d, cam, depth_range=(0.1, 4.0)) for d in datas]
    with TiledRenderer(model, 96, 72, tiles=6, profile=profile) as tiled:
        tiles = tiled.render([(model, d, cam) for d in datas], depth_range=(0.1, 4.0))
    assert len(tiles) == 5
    # Different states give different images, so a mix-up of tiles would show.
    assert np.abs(alone[0][0].astype(int) - alone[1][0]).max() > 50
    for (rgb_t, depth_t), (rgb_a, depth_a) in zip(tiles, alone, strict=True):
        diff = np.abs(rgb_t.astype(int) - rgb_a).max(axis=-1)
        if profile.shadows:
            assert (diff > 2).mean() < 0.005
        else:
            assert diff.max() <= 2
        assert np.abs(depth_t - depth_a).max() < 1e-4


def test_tiled_renderer_refuses_too_many_views_and_use_outside_with() -> None:
    world = SimWorld(BUNDLED)
    model, cam = world.model, world.model.camera(world.camera_id("camera")).name
    tiled = TiledRenderer(model, 32, 24, tiles=2, profile=FAST)
    with pytest.raises(RenderError, match="called outside its with-block"):
        tiled.render([(model, world.data, cam)])
    with tiled, pytest.raises(RenderError, match="3 views for 2 tiles"):
        tiled.render([(model, world.data, cam)] * 3)
