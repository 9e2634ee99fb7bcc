"""``r2s2r metrics TABLE.csv``: score sim-versus-real success rates from any simulator, as JSON.

The table is a plain CSV with a header row. Required columns: ``policy``, ``sim_success``,
``real_success`` (success rates in [0, 1]). Optional, both or neither: ``sim_trials``,
``real_trials`` (positive whole numbers). With trials, each rate × trials must be a whole number to
within the precision the rate is written with (``0.333`` with 3 trials is 1 success), and the output
adds Wilson intervals per policy and bootstrap intervals (episodes resampled) for every
cross-policy metric. Other columns are ignored. Bad input exits with status 2 and a message naming
the file, the line and the column. Undefined values (e.g. Pearson of a constant column) are JSON
``null``.

Nothing is graded unless ``--targets FILE`` is given (YAML: ``pearson: {min: 0.95}``,
``mmrv: {max: 0.03}``); then ``targets`` holds each bound, the measured value and ``met``
(``null`` for a metric that is undefined or not measured here, such as failure_prediction_accuracy).
"""

from __future__ import annotations

import argparse
import csv
import decimal
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r_eval.analysis import metrics
from r2s2r_eval.analysis.targets import Target, TargetsError, grade, load_targets
from r2s2r_eval.cli.common import (
    Subcommand,
    add_bootstrap_options,
    add_mmrv_option,
    add_targets_option,
    bad_input,
)

__all__ = ["COMMAND", "TableError", "PolicyRow", "cmd_metrics", "read_table", "register", "score_table"]

REQUIRED = ("policy", "sim_success", "real_success")
TRIALS = ("sim_trials", "real_trials")
MAX_TABLE_BYTES = 16 * 1024 * 1024


class TableError(ValueError):
    """The success table is missing, malformed or holds a value out of range."""


@dataclass(frozen=True, kw_only=True)
class PolicyRow:
    """One policy of the table.

    Attributes:
        policy: policy name (unique in the table).
        sim_success: sim success rate in [0, 1] (``sim_successes / sim_trials`` when trials are given).
        real_success: real success rate in [0, 1].
        sim_trials: sim episodes, or None if the table has no trials.
        real_trials: real episodes, or None.
        sim_successes: sim successes (whole), or None.
        real_successes: real successes (whole), or None.
    """

    policy: str
    sim_success: float
    real_success: float
    sim_trials: int | None = None
    real_trials: int | None = None
    sim_successes: int | None = None
    real_successes: int | None = None


def _cell(path: Path, line: int, column: str, text: str) -> tuple[str, float]:
    """Where a cell is (for messages) and its number.

    Raises:
        TableError: the cell is not a number; the message names the file, line and column.
    """
    where = f"{path}: line {line}, column {column!r}"
    try:
        return where, float(text)
    except ValueError:
        raise TableError(f"{where}: not a number: {text!r}") from None


def _rate(path: Path, line: int, column: str, text: str) -> float:
    where, value = _cell(path, line, column, text)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise TableError(f"{where}: success rate must be in [0, 1]: got {text!r}")
    return value


def _trials(path: Path, line: int, column: str, text: str) -> int:
    where, value = _cell(path, line, column, text)
    if not (math.isfinite(value) and value == round(value) and value >= 1):
        raise TableError(f"{where}: trials must be a positive whole number: got {text!r}")
    return int(value)


def _count(path: Path, line: int, column: str, text: str, trials: int) -> int:
    """Successes from a written rate: ``round(rate × trials)``, checked against the written precision.

    The count must give back the rate to within half a unit of its last written decimal
    (``0.333`` or ``0.33`` with 3 trials is 1 success; ``0.55`` with 10 trials is an error).
    """
    rate = float(text)
    exponent = decimal.Decimal(text.strip()).as_tuple().exponent
    assert isinstance(exponent, int)  # finite: checked by _rate
    half_unit = 0.5 * 10.0 ** min(exponent, 0)
    k = round(rate * trials)
    if abs(k / trials - rate) > half_unit + 1e-12:
        raise TableError(
            f"{path}: line {line}, column {column!r}: {text} × {trials} trials is not a whole number "
            f"of successes (nearest: {k}/{trials} = {k / trials:.6g})"
        )
    return k


def read_table(path: Path) -> list[PolicyRow]:
    """Read and check a success table (see the module docstring).

    Raises:
        TableError: unreadable or oversized file, missing column, bad value, duplicate policy,
            fewer than 2 policies; the message names the file, line and column.
    """
    try:
        if path.stat().st_size > MAX_TABLE_BYTES:
            raise TableError(f"{path}: larger than {MAX_TABLE_BYTES} bytes; not a success table")
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise TableError(f"{path}: cannot read: {err}") from None
    reader = csv.DictReader(text.splitlines(), strict=True)
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as err:
        raise TableError(f"{path}: line 1: not a CSV header: {err}") from None
    if not header:
        raise TableError(f"{path}: empty file; expected a header with columns {', '.join(REQUIRED)}")
    reader.fieldnames = header
    duplicates = sorted({h for h in header if header.count(h) > 1})
    if duplicates:
        raise TableError(f"{path}: line 1: duplicate column(s) {', '.join(duplicates)}")
    for column in REQUIRED:
        if column not in header:
            raise TableError(f"{path}: line 1: missing column {column!r} (header: {', '.join(header)})")
    has = [c in header for c in TRIALS]
    if any(has) and not all(has):
        given, missing = (TRIALS[0], TRIALS[1]) if has[0] else (TRIALS[1], TRIALS[0])
        raise TableError(f"{path}: line 1: column {given!r} given without column {missing!r}")
    with_trials = all(has)

    rows: list[PolicyRow] = []
    seen: dict[str, int] = {}
    records = iter(reader)
    while True:
        try:
            record = next(records)
        except StopIteration:
            break
        except csv.Error as err:
            raise TableError(f"{path}: line {reader.line_num}: malformed CSV: {err}") from None
        line = reader.line_num
        if None in record:
            raise TableError(f"{path}: line {line}: more fields than header columns")
        values = {k: (v or "").strip() for k, v in record.items()}
        for column in REQUIRED + (TRIALS if with_trials else ()):
            if values.get(column, "") == "":
                raise TableError(f"{path}: line {line}, column {column!r}: empty value")
        name = values["policy"]
        if name in seen:
            raise TableError(
                f"{path}: line {line}, column 'policy': duplicate policy {name!r} "
                f"(first on line {seen[name]})"
            )
        seen[name] = line
        sim = _rate(path, line, "sim_success", values["sim_success"])
        real = _rate(path, line, "real_success", values["real_success"])
        if not with_trials:
            rows.append(PolicyRow(policy=name, sim_success=sim, real_success=real))
            continue
        n_sim = _trials(path, line, "sim_trials", values["sim_trials"])
        n_real = _trials(path, line, "real_trials", values["real_trials"])
        k_sim = _count(path, line, "sim_success", values["sim_success"], n_sim)
        k_real = _count(path, line, "real_success", values["real_success"], n_real)
        rows.append(
            PolicyRow(
                policy=name,
                sim_success=k_sim / n_sim,
                real_success=k_real / n_real,
                sim_trials=n_sim,
                real_trials=n_real,
                sim_successes=k_sim,
                real_successes=k_real,
            )
        )
    if len(rows) < 2:
        raise TableError(f"{path}: need at least 2 policies to compare: got {len(rows)}")
    return rows


def _num(x: float) -> float | None:
    """JSON has no NaN: undefined values become null."""
    return None if not math.isfinite(x) else float(x)


def score_table(
    rows: list[PolicyRow],
    *,
    rng: np.random.Generator,
    resamples: int = 2000,
    confidence: float = 0.95,
    mmrv_comparison: str = "less",
    targets: tuple[Target, ...] = (),
) -> dict[str, Any]:
    """The JSON-ready metrics of a checked table (see :mod:`r2s2r_eval.analysis.metrics` for definitions).

    With ``targets``, a ``targets`` entry grades the metrics against them; without, there is none.
    """
    sim = np.array([r.sim_success for r in rows])
    real = np.array([r.real_success for r in rows])
    with_trials = rows[0].sim_trials is not None

    def mmrv_fn(**kw: Any) -> Any:
        return metrics.mmrv(**kw, comparison=mmrv_comparison)  # type: ignore[arg-type]

    chosen = {**metrics.CROSS_POLICY_METRICS, "mmrv": mmrv_fn}
    policies: list[dict[str, Any]] = []
    for r in rows:
        entry: dict[str, Any] = {"policy": r.policy}
        for side in ("sim", "real"):
            rate = getattr(r, f"{side}_success")
            side_entry: dict[str, Any] = {"success_rate": rate}
            if with_trials:
                k, n = getattr(r, f"{side}_successes"), getattr(r, f"{side}_trials")
                low, high = metrics.wilson_interval(k, n, confidence=confidence)
                side_entry.update(successes=k, trials=n, wilson_low=low, wilson_high=high)
            entry[side] = side_entry
        policies.append(entry)

    intervals = {}
    if with_trials:
        intervals = metrics.bootstrap_intervals(
            sim_episodes=[metrics.episodes_from_counts(r.sim_successes, r.sim_trials) for r in rows],
            real_episodes=[metrics.episodes_from_counts(r.real_successes, r.real_trials) for r in rows],
            rng=rng,
            resamples=resamples,
            confidence=confidence,
            metrics=chosen,
        )
    scores: dict[str, Any] = {}
    for name, fn in chosen.items():
        item: dict[str, Any] = {"value": _num(float(fn(sim=sim, real=real)))}
        if name in intervals:
            iv = intervals[name]
            item.update(
                bootstrap_low=_num(iv.low),
                bootstrap_high=_num(iv.high),
                bootstrap_undefined_fraction=iv.undefined_fraction,
            )
        scores[name] = item
    graded = {"targets": grade(targets, {k: v["value"] for k, v in scores.items()})} if targets else {}
    return {
        "n_policies": len(rows),
        "confidence": confidence,
        "mmrv_comparison": mmrv_comparison,
        "bootstrap": (
            {"resamples": resamples, "method": "percentile; episodes resampled per policy and side"}
            if with_trials
            else None
        ),
        "policies": policies,
        "metrics": scores,
        **graded,
    }


def cmd_metrics(ns: argparse.Namespace) -> int:
    """Run ``r2s2r metrics``: print the table's metrics as JSON; 2 on bad input."""
    try:
        rows = read_table(Path(ns.table))
        targets = load_targets(ns.targets) if ns.targets else ()
    except (TableError, TargetsError) as err:
        return bad_input("metrics", err)
    result = score_table(
        rows,
        rng=np.random.default_rng(ns.seed),
        resamples=ns.resamples,
        confidence=ns.confidence,
        mmrv_comparison=ns.mmrv_comparison,
        targets=targets,
    )
    print(json.dumps({"table": str(ns.table), "seed": ns.seed, **result}, indent=2, allow_nan=False))
    return 0


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", help="CSV: policy,sim_success,real_success[,sim_trials,real_trials]")
    add_bootstrap_options(parser, confidence_help="Wilson and bootstrap level (default 0.95)")
    add_mmrv_option(parser, help_suffix="; they differ only on ties in sim")
    add_targets_option(parser)


_HELP = "sim-vs-real metrics (Pearson, MMRV, Spearman, Kendall) of a success-rate CSV, as JSON"
COMMAND = Subcommand("metrics", _HELP, __doc__, _add_arguments, cmd_metrics)
register = COMMAND.register
