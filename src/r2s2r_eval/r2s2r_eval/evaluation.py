"""The evaluator's pure parts: real-mode reset/judge hooks, judge answers, outcomes rebuilt from records."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EvaluatorError",
    "Hook",
    "HookKind",
    "Judgement",
    "RecordedOutcome",
    "judgement_from_trigger",
    "outcomes_from_records",
    "parse_hook",
]


class EvaluatorError(ValueError):
    """An invalid parameter of the evaluator: names the parameter, the value and what is allowed."""


class HookKind(enum.Enum):
    """Who resets or judges a real-mode episode."""

    PROMPT = "prompt"  # the operator, on the evaluator's terminal
    SERVICE = "service"  # a ROS service (ResetEpisode for reset, std_srvs/Trigger for judge)


@dataclass(frozen=True)
class Hook:
    """A parsed ``reset_hook`` / ``judge_hook`` value."""

    kind: HookKind
    service: str = ""

    def __str__(self) -> str:
        return self.kind.value if self.kind is HookKind.PROMPT else f"service:{self.service}"


def parse_hook(value: str, parameter: str) -> Hook:
    """``'prompt'`` or ``'service:/name'`` -> :class:`Hook`; anything else raises :class:`EvaluatorError`."""
    if value == HookKind.PROMPT.value:
        return Hook(HookKind.PROMPT)
    kind, sep, name = value.partition(":")
    if sep and kind == HookKind.SERVICE.value and name.startswith("/") and len(name) > 1 and " " not in name:
        return Hook(HookKind.SERVICE, name)
    raise EvaluatorError(
        f"parameter {parameter}: got {value!r}; allowed: 'prompt' or 'service:<absolute service name>' "
        "(e.g. service:/emulated_hardware/reset_episode)"
    )


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """A judge's verdict on a real-mode episode."""

    success: bool
    reason: str  # "success" or why not
    metrics: dict[str, float] = field(default_factory=dict)
    seed: int | None = None  # the seed the judge believes it judged, if it says


def judgement_from_trigger(success: bool, message: str) -> Judgement:
    """Map a ``std_srvs/Trigger`` judge answer to a :class:`Judgement`.

    ``message`` is JSON ``{"reason": str, "seed": int, "metrics": {name: number}, ...}`` (as the emulated
    hardware's judge sends; extra keys ignored, non-numeric metrics dropped) or plain text (the reason).
    """
    reason = "success" if success else "judged_failure"
    metrics: dict[str, float] = {}
    seed = None
    try:
        doc = json.loads(message) if message.strip() else {}
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict):
        if isinstance(doc.get("reason"), str) and doc["reason"]:
            reason = doc["reason"]
        if isinstance(doc.get("seed"), int):
            seed = int(doc["seed"])
        raw = doc.get("metrics")
        if isinstance(raw, dict):
            metrics = {
                str(k): float(v)
                for k, v in raw.items()
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            }
    elif message.strip() and not success:
        reason = message.strip()
    return Judgement(
        success=bool(success), reason="success" if success else reason, metrics=metrics, seed=seed
    )


@dataclass(frozen=True, kw_only=True)
class RecordedOutcome:
    """One episode's outcome rebuilt from recorded ``EpisodeOutcome`` messages."""

    seed: int
    episode_index: int
    policy_id: str
    world_id: str
    world_hash: str
    success: bool
    reason: str
    duration_s: float
    metrics: dict[str, float]
    stamp_s: float  # header stamp of the deciding message (end of the episode)


def outcomes_from_records(messages: Iterable[Any]) -> list[RecordedOutcome]:
    """Rebuild episode outcomes from ``EpisodeOutcome`` messages in recording order (pure; no ROS needed).

    Works on deserialised messages from a bag (rosbags or rclpy objects with the message's fields).
    Consecutive messages for the same seed describe one episode and the last one decides: in real mode a
    policy error is followed by the evaluator's judged outcome for that seed.
    """
    out: list[RecordedOutcome] = []
    for msg in messages:
        outcome = RecordedOutcome(
            seed=int(msg.variation_seed),
            episode_index=int(msg.episode_index),
            policy_id=str(msg.policy_id),
            world_id=str(msg.world_id),
            world_hash=str(msg.world_hash),
            success=bool(msg.success),
            reason="success" if msg.success else (str(msg.failure_reason) or "failure"),
            duration_s=int(msg.duration.sec) + int(msg.duration.nanosec) * 1e-9,
            metrics={str(m.name): float(m.value) for m in msg.metrics},
            stamp_s=int(msg.header.stamp.sec) + int(msg.header.stamp.nanosec) * 1e-9,
        )
        if out and out[-1].seed == outcome.seed:
            out[-1] = outcome
        else:
            out.append(outcome)
    return out
