"""Textures projected from RGB-D frames land where the pattern was, and MuJoCo draws them there.

A synthetic camera with lens distortion looks down at a plane painted in four coloured quadrants; the
frame is made pixel by pixel from that pattern (no renderer), so the projection is checked against the
pattern itself.  Then a quad carrying the projected texture is drawn by MuJoCo from above: each quadrant's
colour comes back on its side, which fixes the texture's orientation on the quad.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

from pathlib import Path  # noqa: E402

import cv2  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from r2s2r_capture.bench.appearance import psnr, ssim_map  # noqa: E402
from r2s2r_capture.errors import ReconstructionError  # noqa: E402
from r2s2r_capture.real2sim.appearance import Patch, add_patches  # noqa: E402
from r2s2r_capture.reconstruction.appearance import Surface, project_texture, texel_pixels  # noqa: E402
from r2s2r_sim.render.renderer import RgbdRenderer  # noqa: E402

W, H = 320, 240
K = np.array([[300.0, 0.0, 161.0], [0.0, 302.0, 118.0], [0.0, 0.0, 1.0]])
D = np.array([-0.06, 0.07, 0.0006, -0.0009, -0.02])
HEIGHT = 1.0  # the camera above the plane z = 0 (m)
# Looking straight down: optical z along world -z, optical x along world x, optical y along world -y.
T_WC = np.eye(4)
T_WC[:3, :3] = np.diag([1.0, -1.0, -1.0])
T_WC[:3, 3] = [0.0, 0.0, HEIGHT]
COLOURS = {(False, False): (200, 30, 30), (True, False): (30, 200, 30), (False, True): (30, 30, 200)}
WHITE = (230, 230, 230)


def _pattern(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Four quadrants about (0.02, -0.03): red, green (x right), blue (y up), white."""
    out = np.empty((*x.shape, 3), np.uint8)
    right, up = x > 0.02, y > -0.03
    out[:] = WHITE
    for (r, u), c in COLOURS.items():
        out[(right == r) & (up == u)] = c
    return out


def _frame(occluder: tuple[float, float, float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distorted frame of the painted plane; ``occluder`` (x0, x1, y0, y1) is a slab 0.1 m above it."""
    px = np.stack(np.meshgrid(np.arange(W, dtype=np.float64), np.arange(H, dtype=np.float64)), -1)
    rays = cv2.undistortPoints(px.reshape(-1, 1, 2), K, D).reshape(H, W, 2)
    # optical (x, y, 1) at depth HEIGHT: world x = x * HEIGHT, world y = -y * HEIGHT
    x, y = rays[..., 0] * HEIGHT, -rays[..., 1] * HEIGHT
    rgb = _pattern(x, y)
    depth = np.full((H, W), HEIGHT)
    if occluder is not None:
        x0, x1, y0, y1 = occluder
        top = HEIGHT - 0.1
        xs, ys = rays[..., 0] * top, -rays[..., 1] * top
        over = (xs > x0) & (xs < x1) & (ys > y0) & (ys < y1)
        rgb[over] = (0, 0, 0)
        depth[over] = top
    return rgb, depth


def _plane(name: str = "plane") -> Surface:
    return Surface(name, np.array([-0.2, -0.15, 0.0]), np.array([0.4, 0.0, 0.0]), np.array([0.0, 0.3, 0.0]))


def test_texel_pixels_is_opencvs_plumb_bob() -> None:
    pts = np.random.default_rng(3).uniform([-0.4, -0.3, 0.0], [0.4, 0.3, 0.2], (200, 3))
    uv, z = texel_pixels(pts, K, D, T_WC)
    pc = (pts - T_WC[:3, 3]) @ T_WC[:3, :3]
    ref, _ = cv2.projectPoints(pc.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), K, D)
    np.testing.assert_allclose(uv, ref.reshape(-1, 2), atol=1e-9)
    np.testing.assert_allclose(z, HEIGHT - pts[:, 2])


def test_projected_texture_is_the_pattern_in_the_plane() -> None:
    plane = _plane()
    tex = project_texture(plane, [_frame()], K, D, T_WC, texel_m=0.002)
    assert tex.rgb.shape == (150, 200, 3) and tex.seen.all()
    pts = plane.points(200, 150)
    want = _pattern(pts[..., 0], pts[..., 1])
    # Texel centres 2 mm apart against a pixel of ~3.3 mm: only texels at a quadrant edge blend.
    edge = (np.abs(pts[..., 0] - 0.02) < 0.006) | (np.abs(pts[..., 1] + 0.03) < 0.006)
    err = np.abs(tex.rgb.astype(int) - want.astype(int)).max(axis=2)
    assert err[~edge].max() <= 2, err[~edge].max()
    # Row 0 is the origin's edge (y = -0.15: the blue-free bottom), column 0 its x = -0.2 side.
    assert tuple(tex.rgb[2, 2]) == COLOURS[(False, False)]
    assert tuple(tex.rgb[-3, -3]) == WHITE


def test_hidden_texels_are_not_seen_and_are_filled_from_around() -> None:
    occluder = (-0.05, 0.0, 0.05, 0.1)  # over the blue quadrant
    tex = project_texture(_plane(), [_frame(occluder)], K, D, T_WC, texel_m=0.002)
    pts = _plane().points(200, 150)
    # The slab hides the plane under it and a rim around it (seen from above, a little wider at 0.9 m).
    under = (pts[..., 0] > -0.045) & (pts[..., 0] < -0.005) & (pts[..., 1] > 0.055) & (pts[..., 1] < 0.095)
    assert not tex.seen[under].any()
    assert 0.9 < tex.seen_fraction < 0.99
    # No black from the slab: the hole takes the blue around it (a little of the slab's blended edge and
    # of the quadrants beyond comes with it).
    np.testing.assert_allclose(tex.rgb[under].mean(axis=0), COLOURS[(False, True)], atol=12)
    assert tex.rgb[under].min(axis=0)[2] > 120  # the slab is black


def test_a_surface_facing_away_is_not_seen() -> None:
    p = _plane()
    back = Surface("back", p.origin + p.v, p.u, -p.v)  # the same rectangle, normal down
    assert project_texture(back, [_frame()], K, D, T_WC, texel_m=0.004).seen_fraction == 0.0


def test_no_frames_or_mismatched_depth_is_refused() -> None:
    with pytest.raises(ReconstructionError, match="plane: no RGB-D frames"):
        project_texture(_plane(), [], K, D, T_WC, texel_m=0.002)
    rgb, depth = _frame()
    with pytest.raises(ReconstructionError, match="differ in size"):
        project_texture(_plane(), [(rgb, depth[:-1])], K, D, T_WC, texel_m=0.002)


def test_mujoco_draws_the_texture_where_it_was_seen(tmp_path: Path) -> None:
    plane = _plane()
    tex = project_texture(plane, [_frame()], K, D, T_WC, texel_m=0.002)
    spec = mujoco.MjSpec()
    spec.modelfiledir = str(tmp_path)
    spec.worldbody.add_body(name="holder", pos=[0.0, 0.0, 0.0])
    add_patches(spec, tmp_path, [Patch(plane, "holder", np.eye(4), tex.rgb)])
    spec.worldbody.add_camera(name="top", pos=[0.0, 0.0, HEIGHT], fovy=30.0)  # looks down -z, y up
    spec.visual.headlight.ambient = [1.0, 1.0, 1.0]
    spec.visual.headlight.diffuse = [0.0, 0.0, 0.0]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    model = spec.compile()
    assert (tmp_path / "textures" / "appearance_plane.png").is_file()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with RgbdRenderer(model, 200, 200) as renderer:
        rgb, _ = renderer.render(data, "top")
    f = 100 / np.tan(np.radians(15.0))  # px per (m at 1 m)

    def at(x: float, y: float) -> tuple[int, ...]:
        return tuple(int(v) for v in rgb[int(round(99.5 - y * f)), int(round(99.5 + x * f))])

    for (x, y), colour in {
        (-0.08, -0.08): COLOURS[(False, False)],
        (0.08, -0.08): COLOURS[(True, False)],
        (-0.08, 0.05): COLOURS[(False, True)],
        (0.08, 0.05): WHITE,
    }.items():
        assert np.abs(np.subtract(at(x, y), colour)).max() <= 3, ((x, y), at(x, y), colour)


def test_ssim_and_psnr_score_the_same_image_perfectly_and_noise_less() -> None:
    rgb, _ = _frame()
    mask = np.ones(rgb.shape[:2], bool)
    assert psnr(rgb, rgb, mask) == float("inf")
    np.testing.assert_allclose(ssim_map(rgb, rgb), 1.0)
    noisy = np.clip(rgb + np.random.default_rng(0).normal(0, 10, rgb.shape), 0, 255).astype(np.uint8)
    assert 27.0 < psnr(rgb, noisy, mask) < 29.5  # 20 log10(255 / ~10) = 28.1 dB, less where clipped
    assert 0.2 < ssim_map(rgb, noisy).mean() < 0.95
