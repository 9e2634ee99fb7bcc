"""Sweep rows out of a results store into Parquet or CSV, one row per episode with flat columns."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.sweep_plan import SweepError

__all__ = ["EXPORT_FORMATS", "check_export_path", "export_rows"]

EXPORT_FORMATS = (".parquet", ".csv")


def check_export_path(path: str | Path) -> Path:
    """The export path, if its suffix is known and nothing is there yet.

    Raises:
        SweepError: another suffix, or the file exists (outputs are never overwritten).
    """
    out = Path(path)
    if out.suffix.lower() not in EXPORT_FORMATS:
        raise SweepError(f"--export {out}: unknown format {out.suffix!r} (formats: {list(EXPORT_FORMATS)})")
    if out.exists():
        raise SweepError(f"--export {out}: already exists; refusing to overwrite it")
    return out


def export_rows(results: str | Path, out: str | Path, *, keys: Sequence[str] | None = None) -> int:
    """Write the sweep rows of ``results`` to Parquet or CSV (by ``out``'s suffix); return the row count.

    One row per episode: the store's columns, ``method``, ``index``, ``repeat``, ``variation_seed``,
    ``metric.<name>`` per metric and ``var.<axis>.<name>`` per realised variation parameter (empty where
    a row lacks it).  ``keys``: only these episodes, in this order; None: every row with an episode key.
    The file is written next to ``out`` and renamed into place, so it is never half-written.

    Raises:
        SweepError: unknown suffix, or ``out`` exists.
    """
    import pyarrow as pa

    path = check_export_path(out)
    with ResultsStore(results) as store:
        rows = [r for r in store.rows() if r.episode_key is not None]
    if keys is not None:
        by_key = {r.episode_key: r for r in rows}
        rows = [by_key[k] for k in keys if k in by_key]
    var_names: dict[str, None] = {}
    metric_names: set[str] = set()
    for r in rows:
        var_names.update(dict.fromkeys((r.variation or {}).get("params", {})))
        metric_names.update(r.metrics)
    var = [r.variation or {} for r in rows]
    columns: dict[str, pa.Array] = {
        "episode_key": pa.array([r.episode_key for r in rows], pa.string()),
        "policy": pa.array([r.policy for r in rows], pa.string()),
        "parameters": pa.array([json.dumps(dict(r.parameters), sort_keys=True) for r in rows], pa.string()),
        "world_id": pa.array([r.world_id for r in rows], pa.string()),
        "world_hash": pa.array([r.world_hash for r in rows], pa.string()),
        "seed": pa.array([r.seed for r in rows], pa.int64()),
        "success": pa.array([r.success for r in rows], pa.bool_()),
        "reason": pa.array([r.reason for r in rows], pa.string()),
        "duration_s": pa.array([r.duration_s for r in rows], pa.float64()),
        "started_at": pa.array([r.started_at for r in rows], pa.string()),
        "method": pa.array([v.get("method") for v in var], pa.string()),
        "index": pa.array([v.get("index") for v in var], pa.int64()),
        "repeat": pa.array([v.get("repeat") for v in var], pa.int64()),
        "variation_seed": pa.array([v.get("seed") for v in var], pa.uint64()),
    }
    for name in sorted(metric_names):
        columns[f"metric.{name}"] = pa.array([r.metrics.get(name) for r in rows], pa.float64())
    for name in var_names:
        columns[f"var.{name}"] = pa.array([v.get("params", {}).get(name) for v in var], pa.float64())
    table = pa.table(columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            import pyarrow.csv as pcsv

            pcsv.write_csv(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return table.num_rows
