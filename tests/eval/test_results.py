"""The SQLite results store: round trip, schema checks and misuse."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import EpisodeRow, ResultsError, ResultsStore, utc_now


def _row(**kw: object) -> EpisodeRow:
    base: dict[str, object] = dict(
        policy="reference",
        parameters={"speed": 1.0},
        world_id="tabletop-pick-v1",
        world_hash="ab" * 32,
        seed=3,
        success=True,
        reason="success",
        duration_s=8.5,
        metrics={"object_to_target_m": 0.01},
        started_at=utc_now(),
    )
    base.update(kw)
    return EpisodeRow(**base)  # type: ignore[arg-type]


def test_round_trip_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.sqlite"
    with ResultsStore(path) as store:
        assert store.add(_row()) == 1
        store.add(_row(seed=4, success=False, reason="timeout", policy="other"))
        assert len(store) == 2
    with ResultsStore(path) as store:
        rows = list(store.rows())
        assert [r.seed for r in rows] == [3, 4]
        assert rows[0].parameters == {"speed": 1.0} and rows[0].metrics == {"object_to_target_m": 0.01}
        assert rows[1].success is False and rows[1].reason == "timeout"
        assert [r.policy for r in store.rows(policy="other")] == ["other"]


def test_refuses_foreign_files(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n" * 100)
    with pytest.raises(ResultsError, match="notes.txt: not an r2s2r results database"):
        ResultsStore(text).__enter__()
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(
        ResultsError, match="other.sqlite: not an r2s2r results database \\(application_id 0x0"
    ):
        ResultsStore(other).__enter__()


def test_refuses_other_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with ResultsStore(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(ResultsError, match="schema version 99, this r2s2r reads version 1"):
        ResultsStore(path).__enter__()


def test_misuse_and_bad_rows(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    with pytest.raises(ResultsError, match="used outside its with-block"):
        store.add(_row())
    with store:
        with pytest.raises(ResultsError, match="metrics \\['m'\\] are not finite"):
            store.add(_row(metrics={"m": float("nan")}))
        with pytest.raises(ResultsError, match="parameters are not JSON-serialisable"):
            store.add(_row(parameters={"x": object()}))
        assert len(store) == 0
    with pytest.raises(ResultsError, match="used after close"):
        store.add(_row())
    with pytest.raises(ResultsError, match="can be entered once"):
        store.__enter__()
