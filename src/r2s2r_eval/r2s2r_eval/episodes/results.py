"""Episode results store: one SQLite row per episode, schema-versioned; stdlib sqlite3 only."""

from __future__ import annotations

import datetime
import json
import math
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from r2s2r_sim.closing import Closing

__all__ = ["SCHEMA_VERSION", "EpisodeRow", "ResultsError", "ResultsStore"]

SCHEMA_VERSION = 1
# PRAGMA application_id marks the file as ours ("r2s2"), independently of the table layout.
_APPLICATION_ID = 0x72327332

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    policy TEXT NOT NULL,
    parameters TEXT NOT NULL,
    world_id TEXT NOT NULL,
    world_hash TEXT NOT NULL,
    seed INTEGER NOT NULL,
    success INTEGER NOT NULL CHECK (success IN (0, 1)),
    reason TEXT NOT NULL,
    duration_s REAL NOT NULL,
    metrics TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE INDEX episodes_policy_world ON episodes (policy, world_id);
"""
# Optional sweep columns (nullable, so schema version 1 still describes the file): added on open when missing.
# episode_key: the sweep's deterministic episode identity (unique); variation: JSON of the variation.
_OPTIONAL_COLUMNS = {"episode_key": "TEXT", "variation": "TEXT"}
_OPTIONAL_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS episodes_key ON episodes (episode_key)"


class ResultsError(RuntimeError):
    """The results file is not an r2s2r results database, has another schema version, or is misused."""


@dataclass(frozen=True, kw_only=True)
class EpisodeRow:
    """One stored episode.

    Attributes:
        id: row id (assigned by the store; 0 before insertion).
        policy: registered policy name (or ``module:Class``).
        parameters: the policy's parameters.
        world_id: world id.
        world_hash: content hash of the compiled model.
        seed: variation seed.
        success: the task succeeded.
        reason: ``success`` or the failure reason.
        duration_s: episode length (s, the episode's clock).
        metrics: named scalars.
        started_at: ISO-8601 UTC wall time the episode started.
        episode_key: a sweep episode's deterministic identity (unique in the store), or None.
        variation: the episode's variation (method, index, seed, realised vector...), or None.
    """

    policy: str
    parameters: Mapping[str, Any]
    world_id: str
    world_hash: str
    seed: int
    success: bool
    reason: str
    duration_s: float
    metrics: Mapping[str, float]
    started_at: str
    id: int = 0
    episode_key: str | None = None
    variation: Mapping[str, Any] | None = None


def utc_now() -> str:
    """The current UTC time in ISO-8601 (for ``started_at``)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


class ResultsStore(Closing):
    """An SQLite file of episode rows; use as a context manager.

    A new file is created with the current schema; an existing one must carry r2s2r's application id and
    the same schema version.  Rows are committed as they are added, so an interrupted sweep keeps its rows.

    Example:
        with ResultsStore("out/results.sqlite") as store:
            store.add(row)
    """

    def __init__(self, path: str | Path) -> None:
        """Remember the file; it is opened (or created) in ``__enter__``."""
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    def __enter__(self) -> ResultsStore:
        """Open or create the database.

        Raises:
            ResultsError: the file is not an r2s2r results database (naming it), or has another schema
                version, or the store was already opened.
        """
        if self._conn is not None or self._closed:
            raise ResultsError(f"{self.path}: a ResultsStore can be entered once; make a new one")
        existed = self.path.exists() and self.path.stat().st_size > 0
        if not existed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path)
        except sqlite3.Error as err:
            raise ResultsError(f"{self.path}: cannot open as SQLite: {err}") from err
        try:
            if existed:
                self._check(conn)
            else:
                with conn:
                    conn.executescript(_SCHEMA)
                    conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            self._add_optional_columns(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return self

    def _check(self, conn: sqlite3.Connection) -> None:
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as err:
            raise ResultsError(f"{self.path}: not an r2s2r results database (not SQLite: {err})") from err
        if app_id != _APPLICATION_ID:
            raise ResultsError(
                f"{self.path}: not an r2s2r results database (application_id {app_id:#x}, "
                f"expected {_APPLICATION_ID:#x}); refusing to write to it"
            )
        if version != SCHEMA_VERSION:
            raise ResultsError(
                f"{self.path}: results schema version {version}, this r2s2r reads version {SCHEMA_VERSION}"
            )

    @staticmethod
    def _add_optional_columns(conn: sqlite3.Connection) -> None:
        have = {r[1] for r in conn.execute("PRAGMA table_info(episodes)")}
        with conn:
            for name, kind in _OPTIONAL_COLUMNS.items():
                if name not in have:
                    conn.execute(f"ALTER TABLE episodes ADD COLUMN {name} {kind}")
            conn.execute(_OPTIONAL_INDEX)

    def close(self) -> None:
        """Close the database; the store cannot be used afterwards."""
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._closed = True

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            state = "after close" if self._closed else "outside its with-block"
            raise ResultsError(f"{self.path}: ResultsStore used {state}")
        return self._conn

    def add(self, row: EpisodeRow) -> int:
        """Insert ``row`` and commit; return its id.

        Raises:
            ResultsError: a non-finite duration or metric, parameters or variation that are not
                JSON-serialisable, or an ``episode_key`` already stored.
        """
        if not math.isfinite(row.duration_s):
            raise ResultsError(f"{self.path}: duration_s must be finite, got {row.duration_s}")
        bad = sorted(k for k, v in row.metrics.items() if not math.isfinite(float(v)))
        if bad:
            raise ResultsError(f"{self.path}: metrics {bad} are not finite")
        try:
            params = json.dumps(dict(row.parameters), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ResultsError(f"{self.path}: parameters are not JSON-serialisable: {err}") from err
        metrics = json.dumps({k: float(v) for k, v in row.metrics.items()}, sort_keys=True)
        try:
            variation = None if row.variation is None else json.dumps(dict(row.variation), allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ResultsError(f"{self.path}: variation is not JSON-serialisable: {err}") from err
        try:
            with self._db as db:
                cur = db.execute(
                    "INSERT INTO episodes (policy, parameters, world_id, world_hash, seed, success, reason, "
                    "duration_s, metrics, started_at, episode_key, variation) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row.policy,
                        params,
                        row.world_id,
                        row.world_hash,
                        int(row.seed),
                        int(bool(row.success)),
                        row.reason,
                        float(row.duration_s),
                        metrics,
                        row.started_at,
                        row.episode_key,
                        variation,
                    ),
                )
        except sqlite3.IntegrityError as err:
            raise ResultsError(f"{self.path}: episode_key {row.episode_key!r} is already stored") from err
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    def rows(self, *, policy: str | None = None, world_id: str | None = None) -> Iterator[EpisodeRow]:
        """Stored rows in insertion order, optionally only one policy's and/or one world's."""
        query = "SELECT * FROM episodes"
        where, args = [], []
        if policy is not None:
            where.append("policy = ?")
            args.append(policy)
        if world_id is not None:
            where.append("world_id = ?")
            args.append(world_id)
        if where:
            query += " WHERE " + " AND ".join(where)
        cursor = self._db.execute(query + " ORDER BY id", args)
        names = [d[0] for d in cursor.description]
        for values in cursor:
            rec = dict(zip(names, values, strict=True))
            yield EpisodeRow(
                id=rec["id"],
                policy=rec["policy"],
                parameters=json.loads(rec["parameters"]),
                world_id=rec["world_id"],
                world_hash=rec["world_hash"],
                seed=rec["seed"],
                success=bool(rec["success"]),
                reason=rec["reason"],
                duration_s=rec["duration_s"],
                metrics=json.loads(rec["metrics"]),
                started_at=rec["started_at"],
                episode_key=rec["episode_key"],
                variation=None if rec["variation"] is None else json.loads(rec["variation"]),
            )

    def episode_keys(self) -> set[str]:
        """The ``episode_key`` of every stored row that has one (what a resumed sweep skips)."""
        cursor = self._db.execute("SELECT episode_key FROM episodes WHERE episode_key IS NOT NULL")
        return {k for (k,) in cursor}

    def __len__(self) -> int:
        """Number of stored episodes."""
        return int(self._db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
