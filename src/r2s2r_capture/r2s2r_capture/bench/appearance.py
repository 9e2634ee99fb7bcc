r"""Study: does the textured world look like the unit where the flat one does not?  PSNR and SSIM per region.

    python -m r2s2r_capture.bench.appearance [--profile realistic] [--out out/appearance.json]

Captures the scene from the emulated unit (:func:`r2s2r_capture.procedures.session.capture_emulated`), runs
:func:`r2s2r_capture.real2sim.pipeline.real2sim` (textured), and compares the capture's colour frame with
the written world drawn from its calibrated camera, in the state it starts in (the captured scene).  The
flat world is the same world with the textured quads hidden (they are all it adds, in
:data:`~r2s2r_capture.real2sim.appearance.APPEARANCE_GROUP`): the same geometry, camera and lights, so the
difference is the appearance alone.

Regions are the reconstruction's own: each pixel is labelled by what the written world draws there (the
table's body, the objects' bodies, the world body's floor and backdrop; the arm is left out), and each
region is eroded by 2 px so that the few millimetres of a primitive's edge do not decide the score.  SSIM is
the Gaussian-window SSIM of Wang et al. (2004: sigma 1.5, K1 0.01, K2 0.03) on each colour channel,
averaged over the region; PSNR is over the region's pixels and channels.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import mujoco
import numpy as np
from r2s2r_sim.cells.camera_frames import CameraFrames
from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.render.profile import FAST
from r2s2r_sim.world.kinematics import subtree_bodies
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.procedures import session as C
from r2s2r_capture.real2sim.appearance import APPEARANCE_GROUP
from r2s2r_capture.real2sim.capture_data import read_capture
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim
from r2s2r_capture.sysid.recording import ExcitationConfig

__all__ = ["REGIONS", "compare_frames", "psnr", "region_masks", "render_world", "ssim_map", "study"]

REGIONS = ("table", "objects", "background")
_REGION_RGB = {"table": (1.0, 0.0, 0.0), "objects": (0.0, 1.0, 0.0), "background": (0.0, 0.0, 1.0)}
_ROBOT_RGB = (1.0, 1.0, 1.0)
_ERODE_PX = 2
_CAPTURE = C.CaptureConfig(
    n_intrinsics_views=8,
    n_scene_frames=1,
    excitation=ExcitationConfig(
        duration_s=4.0, rate_hz=500.0, base_freq_hz=0.25, n_harmonics=5, range_fraction=0.35, max_velocity=1.2
    ),
)
_REAL2SIM = Real2SimConfig(max_iters=5, report=False)


def ssim_map(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-pixel SSIM of two uint8 images (H, W) or (H, W, C), averaged over channels (Wang et al. 2004)."""
    x, y = a.astype(np.float64), b.astype(np.float64)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2

    def blur(img: np.ndarray) -> np.ndarray:
        return cv2.GaussianBlur(img, (11, 11), 1.5, borderType=cv2.BORDER_REFLECT)

    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.mean(axis=2) if s.ndim == 3 else s


def psnr(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
    """PSNR (dB) of uint8 images over ``mask``'s pixels; inf where they agree exactly."""
    d = a[mask].astype(np.float64) - b[mask].astype(np.float64)
    mse = float(np.mean(d * d))
    return float("inf") if mse == 0.0 else 10.0 * np.log10(255.0**2 / mse)


def compare_frames(
    frame: np.ndarray, render: np.ndarray, masks: dict[str, np.ndarray]
) -> dict[str, dict[str, float]]:
    """``{region: {"psnr_db", "ssim", "pixels"}}`` of ``render`` against ``frame``."""
    s = ssim_map(frame, render)
    return {
        name: {"psnr_db": psnr(frame, render, m), "ssim": float(s[m].mean()), "pixels": int(m.sum())}
        for name, m in masks.items()
        if m.any()
    }


def _camera_frames(world: SimWorld, profile: Any = None) -> CameraFrames:
    cam = world.config.cameras[0]
    return CameraFrames(world.model, cam.mjcf_camera, cam, profile or world.config.render_profile(cam))


def render_world(world_dir: Path, *, textured: bool = True) -> np.ndarray:
    """The world's colour frame from its calibrated camera at the start; ``textured=False``: no quads."""
    world = SimWorld(world_dir)
    if not textured:
        world.model.geom_group[world.model.geom_group == APPEARANCE_GROUP] = APPEARANCE_GROUP + 3
    mujoco.mj_forward(world.model, world.data)
    with _camera_frames(world) as frames:
        return frames.render(world.data).rgb


def _region_of_body(world: SimWorld) -> Callable[[int], str | None]:
    """Which region a body's geoms draw: the arm none, the world body background, the table's body table."""
    model = world.model
    root = int(model.joint(world.config.robot.arm_joints[0]).bodyid[0])
    while int(model.body_parentid[root]) != 0:
        root = int(model.body_parentid[root])
    robot = set(subtree_bodies(model, root))
    table = model.body("table").id

    def region(body: int) -> str | None:
        top = body
        while int(model.body_parentid[top]) != 0:
            top = int(model.body_parentid[top])
        if body in robot:
            return None
        if body == 0:
            return "background"
        return "table" if top == table else "objects"

    return region


def region_masks(world_dir: Path) -> dict[str, np.ndarray]:
    """Each region's pixels in the world's frame: the world drawn unlit, one colour per region, eroded."""
    world = SimWorld(world_dir)
    model = world.model
    region = _region_of_body(world)
    for g in range(model.ngeom):
        r = region(int(model.geom_bodyid[g]))
        model.geom_matid[g] = -1
        model.geom_rgba[g] = (*(_ROBOT_RGB if r is None else _REGION_RGB[r]), 1.0)
    model.light_active[:] = 0
    model.vis.headlight.ambient[:] = 1.0
    model.vis.headlight.diffuse[:] = 0.0
    model.vis.headlight.specular[:] = 0.0
    mujoco.mj_forward(model, world.data)
    with _camera_frames(world, FAST) as frames:
        rgb = frames.render(world.data).rgb.astype(np.int32)
    kernel = np.ones((2 * _ERODE_PX + 1, 2 * _ERODE_PX + 1), np.uint8)
    masks = {}
    for name in REGIONS:
        want = np.asarray(_REGION_RGB[name]) * 255
        exact = np.all(np.abs(rgb - want) <= 8, axis=2)
        if name == "background":
            exact |= np.all(rgb <= 8, axis=2)  # nothing drawn: the clear colour
        masks[name] = cv2.erode(exact.astype(np.uint8), kernel).astype(bool)
    return masks


def measure_world(world_dir: Path, frame: np.ndarray) -> dict[str, dict[str, dict[str, float]]]:
    """``{"flat": ..., "textured": ...}`` of :func:`compare_frames` for the capture's ``frame``."""
    masks = region_masks(world_dir)
    return {
        kind: compare_frames(frame, render_world(world_dir, textured=kind == "textured"), masks)
        for kind in ("flat", "textured")
    }


def study(profile: str, root: Path, *, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Capture from the emulated unit with ``profile``, run real2sim, measure flat and textured.

    The excitation and the identification are cut short (:data:`_CAPTURE`, :data:`_REAL2SIM`): the
    appearance comes from the board views and the scene frames alone.
    """
    cap = C.capture_emulated(root / "capture", profile=profile_path(profile), config=_CAPTURE)
    say(f"captured {cap.bag}")
    result = real2sim([cap.bag], root / "world", config=_REAL2SIM, progress=say)
    tcfg = SimWorld(result.world_dir).config
    data = read_capture([cap.bag], tuple(tcfg.robot.arm_joints))
    return {"profile": profile, "figures": measure_world(result.world_dir, data.scene_frames[0][0])}


def table(figures: dict[str, dict[str, dict[str, float]]]) -> str:
    """The figures as a Markdown table: one row per region, flat against textured."""
    lines = [
        "| region | pixels | PSNR flat (dB) | PSNR textured (dB) | SSIM flat | SSIM textured |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in REGIONS:
        f, t = figures["flat"].get(name), figures["textured"].get(name)
        if f is None or t is None:
            continue
        lines.append(
            f"| {name} | {t['pixels']} | {f['psnr_db']:.2f} | {t['psnr_db']:.2f} | {f['ssim']:.3f} | "
            f"{t['ssim']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the study and print its table (and write it as JSON with ``--out``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="realistic", help="shipped hardware profile of the emulated unit")
    p.add_argument("--out", default="", help="JSON file to write the figures to")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="r2s2r-appearance-") as tmp:
        res = study(args.profile, Path(tmp), say=lambda line: print(line, file=sys.stderr))
    print(table(res["figures"]))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
