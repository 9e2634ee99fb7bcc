"""The transfer study's training data: demonstrations and perception frames, in shards over workers.

Each shard is a dataset (or frame folder) of its own with its own seed, so the shards can be recorded in
parallel and a stopped run keeps the shards it finished.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from r2s2r_sim.progress import Progress

from r2s2r_eval.learning.demos import DemoConfig, collect_demos
from r2s2r_eval.learning.perception_frames import (
    FRAMES_FILE,
    PerceptionFramesConfig,
    collect_perception_frames,
)
from r2s2r_eval.studies.transfer_eval import in_pool

__all__ = ["collect_sharded", "perception_seed", "render_sharded", "shard_seed"]


def shard_seed(seed: int, shard: int) -> int:
    """Demonstration seed of dataset shard ``shard`` of a run with base seed ``seed``."""
    return 100 * (seed + 1) + shard


def perception_seed(seed: int, shard: int) -> int:
    """Seed of perception-frame shard ``shard`` of a run with base seed ``seed`` (apart from the demos')."""
    return 200 * (seed + 1) + shard


def collect_sharded(
    data: Path,
    demo_cfg: DemoConfig,
    *,
    seed: int,
    workers: int,
    log: Callable[[str], None],
    progress_label: str | None = None,
) -> list[Path]:
    """``demo_cfg.episodes`` demonstrations as ``workers`` dataset shards ``data/shard_<k>``, in parallel.

    With ``progress_label`` the episodes kept are counted on stderr under that label, with an ETA.
    """
    counts = [demo_cfg.episodes // workers + (k < demo_cfg.episodes % workers) for k in range(workers)]
    shards = [data / f"shard_{k}" for k in range(workers) if counts[k]]
    cfgs = [replace(demo_cfg, episodes=counts[k], seed=shard_seed(seed, k)) for k in range(len(shards))]
    with Progress(demo_cfg.episodes, progress_label or "", "ep", quiet=progress_label is None) as bar:
        if len(shards) == 1:
            summaries = [_collect_shard(shards[0], cfgs[0], report=bar.update)]
        else:
            jobs = list(zip(shards, cfgs, strict=True))
            summaries = in_pool(_collect_shard, jobs, len(shards), bar=None if bar.quiet else bar)
    for d, s in zip(shards, summaries, strict=True):
        log(f"  {d}: {s.episodes} episodes, {s.frames} frames, {s.attempts} attempts")
    return shards


def _collect_shard(shard: Path, cfg: DemoConfig, *, report: Callable[[int], None] | None = None) -> Any:
    """:func:`collect_demos` of one shard, reporting each episode kept as ``report(1)``."""
    kept_so_far = 0

    def progress(kept: int, attempts: int) -> None:
        nonlocal kept_so_far
        if report is not None and kept > kept_so_far:
            report(kept - kept_so_far)
            kept_so_far = kept

    return collect_demos(shard, cfg, progress=progress)


def render_sharded(
    folder: Path,
    pf_cfg: PerceptionFramesConfig,
    *,
    seed: int,
    workers: int,
    log: Callable[[str], None],
    progress_label: str | None = None,
) -> list[Path]:
    """``pf_cfg.worlds`` worlds of perception frames as ``workers`` shards ``folder/shard_<k>``, in parallel.

    A shard whose frames exist is kept (resume).  With ``progress_label`` the worlds rendered are counted
    on stderr under that label, with an ETA.
    """
    counts = [pf_cfg.worlds // workers + (k < pf_cfg.worlds % workers) for k in range(workers)]
    shards = [folder / f"shard_{k}" for k in range(workers) if counts[k]]
    todo = [
        (d, replace(pf_cfg, worlds=counts[k], seed=perception_seed(seed, k)))
        for k, d in enumerate(shards)
        if not (d / FRAMES_FILE).is_file()
    ]
    total = sum(c.worlds for _, c in todo)
    with Progress(total, progress_label or "", "world", quiet=progress_label is None) as bar:
        if len(todo) == 1:
            _render_shard(*todo[0], report=bar.update)
        elif todo:
            in_pool(_render_shard, todo, len(todo), bar=None if bar.quiet else bar)
    log(f"  {folder}: {pf_cfg.worlds * pf_cfg.per_world} perception frames in {len(shards)} shards")
    return shards


def _render_shard(
    shard: Path, cfg: PerceptionFramesConfig, *, report: Callable[[int], None] | None = None
) -> Path:
    """:func:`collect_perception_frames` of one shard, reporting each world rendered as ``report(1)``."""
    return collect_perception_frames(
        shard, cfg, progress=None if report is None else lambda _i, _n: report(1)
    )
