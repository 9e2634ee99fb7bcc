"""The evaluator's pure parts: its configuration, real-mode hooks, judge answers, outcomes from records."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from r2s2r_sim.ranges import check_fields, field_interval, within
from r2s2r_sim.tasks.registry import settle_period_s
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import world_path

__all__ = [
    "MODES",
    "ON_POLICY_LOST",
    "PARAMETER_CONSTRAINTS",
    "PARAMETER_DESCRIPTIONS",
    "EvaluatorConfig",
    "EvaluatorError",
    "Hook",
    "HookKind",
    "Judgement",
    "RecordedOutcome",
    "judgement_from_trigger",
    "outcomes_from_records",
    "parse_hook",
    "task_settle_s",
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


MODES = ("sim", "real")
ON_POLICY_LOST = ("stop", "continue")


@dataclass(frozen=True, kw_only=True)
class EvaluatorConfig:
    """The evaluator's parameters (see ``config/evaluator_node.yaml``)."""

    episodes: int = within(10, "[1, 1000000]")
    seed0: int = within(0, "[0, 4611686018427387904]")
    results: str = "out/results.sqlite"
    policy: str = "reference"
    policy_params: str = "{}"
    policy_reset_service: str = "/policy_node/reset_episode"
    episode_timeout_s: float = within(120.0, "[0.1, 86400] s")
    service_timeout_s: float = within(60.0, "[0.1, 86400] s")
    startup_delay_s: float = within(2.0, "[0, 600] s")
    mode: str = "sim"
    world: str = "tabletop-pick-v1"
    reset_hook: str = "prompt"
    judge_hook: str = "prompt"
    policy_done_topic: str = "/policy_node/episode_done"
    policy_timeout_s: float = within(10.0, "[0, 3600] s")  # 0: never
    on_policy_lost: str = "stop"
    world_probe_timeout_s: float = within(3.0, "[0.1, 86400] s")
    operator_timeout_s: float = within(900.0, "[0.1, 86400] s")

    def __post_init__(self) -> None:
        check_fields(self, error=EvaluatorError, prefix="parameter ")
        if self.mode not in MODES:
            raise EvaluatorError(f"parameter mode: got {self.mode!r}; allowed: {', '.join(MODES)}")
        if self.on_policy_lost not in ON_POLICY_LOST:
            raise EvaluatorError(
                f"parameter on_policy_lost: got {self.on_policy_lost!r}; allowed: {', '.join(ON_POLICY_LOST)}"
            )
        parse_hook(self.reset_hook, "reset_hook")
        parse_hook(self.judge_hook, "judge_hook")
        if self.mode == "real" and not self.policy_done_topic.startswith("/"):
            raise EvaluatorError(
                f"parameter policy_done_topic: got {self.policy_done_topic!r}; allowed: an absolute name"
            )
        if not self.results:
            raise EvaluatorError("parameter results: must name an SQLite file, got ''")


def _bounds(name: str) -> tuple[float, float]:
    """The range declared on ``EvaluatorConfig.<name>``, for the parameter's ROS descriptor."""
    interval = field_interval(EvaluatorConfig, name)
    assert interval is not None, name
    return interval.low, interval.high


PARAMETER_DESCRIPTIONS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "episodes": ("Number of episodes N.", _bounds("episodes")),
    "seed0": ("Seed of the first episode; episode i uses seed0 + i.", _bounds("seed0")),
    "results": ("SQLite results file (created if missing; must be an r2s2r results database).", None),
    "policy": ("Policy name recorded in each row (as given to the policy node).", None),
    "policy_params": ("YAML mapping of the policy's parameters, recorded in each row.", None),
    "policy_reset_service": ("The policy node's ResetEpisode service; empty: do not call one.", None),
    "episode_timeout_s": (
        "Wall-clock limit (s) to wait for an episode's outcome.",
        _bounds("episode_timeout_s"),
    ),
    "service_timeout_s": (
        "Wall-clock limit (s) for each service to appear and answer.",
        _bounds("service_timeout_s"),
    ),
    "startup_delay_s": (
        "Wall time (s) to let DDS discovery settle after the services appear, before the "
        "first reset (best-effort images published before the policy subscribes are lost).",
        _bounds("startup_delay_s"),
    ),
    "mode": ("sim: reset and outcome come from the sim node; real: from reset_hook and judge_hook.", None),
    "world": ("World id recorded in real-mode rows when the reset hook does not report one.", None),
    "reset_hook": (
        "Real mode: who resets the cell. 'prompt' (operator presses Enter; needs a terminal on stdin) or "
        "'service:<name>' (r2s2r_msgs/srv/ResetEpisode, e.g. service:/emulated_hardware/reset_episode).",
        None,
    ),
    "judge_hook": (
        "Real mode: who judges an episode. 'prompt' (operator answers y/n) or 'service:<name>' "
        "(std_srvs/srv/Trigger; success + JSON message with reason and metrics, e.g. "
        "service:/emulated_hardware/judge).",
        None,
    ),
    "policy_done_topic": (
        "Real mode: std_msgs/msg/UInt64 topic on which the policy node says it finished the episode "
        "with that seed.",
        None,
    ),
    "policy_timeout_s": (
        "Wall time (s) without an acknowledgement from the policy (policy_heartbeat) during an episode "
        "after which the policy counts as lost: the episode fails with reason policy_lost; 0: never.",
        _bounds("policy_timeout_s"),
    ),
    "on_policy_lost": (
        "After a lost policy: stop (exit 1 with a message) or continue (wait up to service_timeout_s "
        "for a restarted policy, e.g. launched with respawn_policy:=true, and go on at the next seed).",
        None,
    ),
    "world_probe_timeout_s": (
        "Wall time (s) a probed node has to answer a parameter request: the joint-state publisher (sim "
        "node or driver) when the policy is silent or an episode timed out (no answer: the world is lost, "
        "exit 1), and a silent policy (no answer: policy_lost; an answer: it is holding, the wait goes on).",
        _bounds("world_probe_timeout_s"),
    ),
    "operator_timeout_s": (
        "Real mode with prompt hooks: wall time (s) the operator has to answer each question; then the "
        "episode is recorded with reason operator_timeout (a missing judgement) and the run stops (exit 1).",
        _bounds("operator_timeout_s"),
    ),
}
PARAMETER_CONSTRAINTS = {
    "mode": "one of: sim, real",
    "on_policy_lost": "one of: stop, continue",
    "reset_hook": "prompt | service:<name>",
    "judge_hook": "prompt | service:<name>",
}


def task_settle_s(world: str) -> float:
    """The settle period (s) of ``world``'s task, the time a real-mode episode holds after a policy's done.

    0 for a world not known here (a real cell's own world id: its operator judges once the arm has settled)
    or one without a task.
    """
    try:
        config = load_world_config(world_path(world)).task
    except ValueError:
        return 0.0
    return 0.0 if config is None else settle_period_s(config)
