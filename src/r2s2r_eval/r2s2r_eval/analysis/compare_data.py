"""Episodes of one side of a comparison: a results store or its export read into an ``EpisodeTable``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r_eval.episodes.results import ResultsError, ResultsStore

__all__ = ["CompareError", "EpisodeTable", "load_episodes", "policy_label"]

REQUIRED_COLUMNS = ("policy", "success", "world_id")
MAX_TABLE_BYTES = 2 * 1024**3


class CompareError(ValueError):
    """The results cannot be compared: unreadable, a missing column, no episodes, different worlds."""


def policy_label(name: str, params: Mapping[str, Any]) -> str:
    """``name`` or ``name:k=v,...`` (sorted keys), as ``r2s2r sweep --policy`` spells a policy."""
    args = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{name}:{args}" if args else name


@dataclass(frozen=True, kw_only=True)
class EpisodeTable:
    """The episodes of one side.

    Attributes:
        source: the file read.
        policy: policy label per episode, shape ``(n,)``.
        success: outcome per episode (bool).
        world_id: world id per episode.
        world_hash: world hash per episode ("" if the file has none).
        reason: ``success`` or the failure reason per episode ("" if unknown).
        key: episode key per episode ("" if none).
        params: realised variation parameters, shape ``(n, d)``, ``nan`` where an episode lacks one.
        names: parameter names (``physics.friction_scale``...), length ``d``.
    """

    source: str
    policy: np.ndarray
    success: np.ndarray
    world_id: np.ndarray
    world_hash: np.ndarray
    reason: np.ndarray
    key: np.ndarray
    params: np.ndarray
    names: tuple[str, ...]

    def __len__(self) -> int:
        """Number of episodes."""
        return int(self.success.size)


def _table_from_records(source: str, records: list[dict[str, Any]], names: list[str]) -> EpisodeTable:
    n = len(records)
    params = np.full((n, len(names)), np.nan)
    col = {name: j for j, name in enumerate(names)}
    for i, r in enumerate(records):
        for name, v in r["params"].items():
            if v is not None and name in col:
                params[i, col[name]] = float(v)
    return EpisodeTable(
        source=source,
        policy=np.array([r["policy"] for r in records], dtype=object),
        success=np.array([bool(r["success"]) for r in records], dtype=bool),
        world_id=np.array([r["world_id"] for r in records], dtype=object),
        world_hash=np.array([r.get("world_hash") or "" for r in records], dtype=object),
        reason=np.array([r.get("reason") or "" for r in records], dtype=object),
        key=np.array([r.get("key") or "" for r in records], dtype=object),
        params=params,
        names=tuple(names),
    )


def _load_store(path: Path) -> EpisodeTable:
    records: list[dict[str, Any]] = []
    names: dict[str, None] = {}
    try:
        with ResultsStore(path) as store:
            for row in store.rows():
                p = dict((row.variation or {}).get("params", {}))
                names.update(dict.fromkeys(p))
                records.append(
                    {
                        "policy": policy_label(row.policy, row.parameters),
                        "success": row.success,
                        "world_id": row.world_id,
                        "world_hash": row.world_hash,
                        "reason": row.reason,
                        "key": row.episode_key,
                        "params": p,
                    }
                )
    except ResultsError as err:
        raise CompareError(str(err)) from None
    return _table_from_records(str(path), records, list(names))


def _load_export(path: Path) -> EpisodeTable:
    import pyarrow as pa

    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            import pyarrow.csv as pcsv

            table = pcsv.read_csv(path)
    except (OSError, pa.ArrowException) as err:
        raise CompareError(f"{path}: cannot read as {path.suffix.lstrip('.')}: {err}") from None
    cols = table.column_names
    missing = [c for c in REQUIRED_COLUMNS if c not in cols]
    if missing:
        raise CompareError(
            f"{path}: missing column(s) {', '.join(missing)} (have: {', '.join(cols[:12])}"
            f"{', ...' if len(cols) > 12 else ''}); expected an `r2s2r sweep --export` file"
        )
    data = table.to_pydict()
    n = table.num_rows
    names = [c[4:] for c in cols if c.startswith("var.")]
    for c in ("policy", "success", "world_id"):
        bad = [i for i, v in enumerate(data[c]) if v is None or v == ""]
        if bad:
            raise CompareError(f"{path}: column {c!r} is empty on data row {bad[0] + 1}")
    params_json = data.get("parameters", [None] * n)
    records: list[dict[str, Any]] = []
    for i in range(n):
        success = data["success"][i]
        if isinstance(success, str):
            if success.strip().lower() not in ("true", "false", "1", "0"):
                raise CompareError(f"{path}: column 'success', data row {i + 1}: not a boolean: {success!r}")
            success = success.strip().lower() in ("true", "1")
        elif success not in (True, False, 0, 1):
            raise CompareError(f"{path}: column 'success', data row {i + 1}: not a boolean: {success!r}")
        try:
            params = json.loads(params_json[i]) if params_json[i] else {}
        except (TypeError, json.JSONDecodeError):
            raise CompareError(f"{path}: column 'parameters', data row {i + 1}: not JSON") from None
        records.append(
            {
                "policy": policy_label(str(data["policy"][i]), params),
                "success": bool(success),
                "world_id": str(data["world_id"][i]),
                "world_hash": data.get("world_hash", [None] * n)[i],
                "reason": data.get("reason", [None] * n)[i],
                "key": data.get("episode_key", [None] * n)[i],
                "params": {name: data[f"var.{name}"][i] for name in names},
            }
        )
    return _table_from_records(str(path), records, names)


def load_episodes(path: str | Path) -> EpisodeTable:
    """Read episodes from an r2s2r results store (SQLite) or an ``r2s2r sweep --export`` file.

    The kind is told by content (the SQLite header) and, otherwise, the suffix (``.parquet``,
    ``.csv``). Required export columns: ``policy``, ``success``, ``world_id``; ``parameters``,
    ``world_hash``, ``reason``, ``episode_key`` and ``var.*`` are used when present.

    Raises:
        CompareError: missing or oversized file, unknown format, missing column, bad value; the
            message names the file (and the column and row).
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError as err:
        raise CompareError(f"{p}: cannot read: {err.strerror or err}") from None
    if size > MAX_TABLE_BYTES:
        raise CompareError(f"{p}: larger than {MAX_TABLE_BYTES} bytes; refusing to load")
    if head == b"SQLite format 3\x00":
        return _load_store(p)
    if p.suffix.lower() in (".parquet", ".csv"):
        return _load_export(p)
    raise CompareError(f"{p}: not an SQLite results store, and not .parquet or .csv")
