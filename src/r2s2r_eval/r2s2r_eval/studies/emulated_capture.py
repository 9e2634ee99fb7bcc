"""A world identified from the emulated hardware: the capture procedure, then ``real2sim`` on its bag.

The studies that compare the emulated hardware with its reconstruction (closed loop, transfer) build the
world here.  ``real2sim`` never reads the hardware profile: it sees only the bag, as with a real cell.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from r2s2r_capture.procedures.session import CaptureConfig, capture_emulated
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim

__all__ = ["reconstruct_emulated_world"]


def reconstruct_emulated_world(
    work: Path,
    *,
    profile: Path,
    world: str = "tabletop-pick-v1",
    intrinsics_views: int = 12,
    quick_excitation: bool = False,
    max_iters: int = 30,
    world_id: str | None = None,
    progress: Callable[[str], None] = print,
    progress_bars: bool = False,
) -> tuple[Path, dict[str, float]]:
    """Capture the emulated hardware into ``work/capture`` and identify ``work/world`` from the bag.

    Skipped when ``work/world/world.yaml`` exists (a resumed run); a capture left without a world is this
    function's own partial output and is removed first.

    Args:
        work: folder of the capture bag and the world.
        profile: hardware profile of the emulated unit.
        world: the world the profile was written for, also real2sim's template.
        intrinsics_views: ChArUco views for the intrinsics.
        quick_excitation: a shorter excitation (6 s, 5 harmonics) than the documented procedure's.
        max_iters: identification iterations.
        world_id: ``id`` of the written world; real2sim's default when None.
        progress: called with each progress line.
        progress_bars: also show the capture's and the identification's progress with an ETA on stderr.

    Returns:
        The world folder and the wall time (s) of the stages that ran (``capture``, ``real2sim``).
    """
    out = work / "world"
    wall: dict[str, float] = {}
    if (out / "world.yaml").is_file():
        progress(f"reusing the reconstructed world {out}")
        return out, wall
    shutil.rmtree(work / "capture", ignore_errors=True)
    exc = CaptureConfig().excitation  # the documented capture procedure's trajectory
    if quick_excitation:
        exc = dataclasses.replace(exc, duration_s=6.0, n_harmonics=5, max_velocity=1.2)
    t0 = time.perf_counter()
    cap = capture_emulated(
        work / "capture",
        profile=profile,
        world=world,
        config=CaptureConfig(n_intrinsics_views=intrinsics_views, excitation=exc),
        progress=lambda line: progress(f"capture: {line}"),
        progress_bars=progress_bars,
    )
    wall["capture"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    r2s_cfg = Real2SimConfig(max_iters=max_iters, report=False)
    if world_id is not None:
        r2s_cfg = dataclasses.replace(r2s_cfg, world_id=world_id)
    real2sim(
        [cap.bag],
        out,
        template=world,
        config=r2s_cfg,
        progress=lambda line: progress(f"real2sim: {line}"),
        progress_bars=progress_bars,
    )
    wall["real2sim"] = time.perf_counter() - t0
    return out, wall
