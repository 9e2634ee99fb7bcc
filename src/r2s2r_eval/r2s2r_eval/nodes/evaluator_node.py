"""evaluator_node: drives N episodes through the reset services and stores each outcome in SQLite.

For episode i it calls the world's reset service with seed ``seed0 + i``, then the policy node's
``~/reset_episode`` (if ``policy_reset_service`` is set), waits for the first ``EpisodeOutcome`` with that
seed (from the sim's task checker or a policy error) or ``episode_timeout_s`` of wall time, and writes one
row to ``results``. When done it logs ``evaluator: N episodes, K succeeded -> <results as a full path>`` and
exits 0.

Real mode (``mode: real``: real drivers, or the emulated hardware stand-in, on wall-clock time) has no sim
reset service and no task checker. Two hooks take their place:

* ``reset_hook``: ``prompt`` (the operator resets the cell and presses Enter on the evaluator's terminal) or
  ``service:<name>`` (an ``r2s2r_msgs/srv/ResetEpisode`` service, e.g.
  ``service:/emulated_hardware/reset_episode``);
* ``judge_hook``: ``prompt`` (the operator answers y/n and a reason) or ``service:<name>`` (a
  ``std_srvs/srv/Trigger``: ``success``, and a ``message`` that is JSON with ``reason``, ``seed`` and
  ``metrics`` (name -> number) as ``/emulated_hardware/judge`` sends, or plain text used as the reason).

A real-mode episode ends by the rule every cell shares (:class:`r2s2r_sim.tasks.registry.EpisodeJudge`): when
the policy node says it is done (``std_msgs/msg/UInt64`` with the episode's seed on ``policy_done_topic``,
default ``/policy_node/episode_done``), the arm holds for the settle period of ``world``'s task, then the
judge is asked; on a policy error (an ``EpisodeOutcome`` for the seed) or after ``episode_timeout_s`` of wall
time, at once. The row stores the judge's verdict (a policy error stays the reason) with
``variation = {"mode": "real", "end": ..., ...}``, and the verdict is published as the episode's
``EpisodeOutcome`` so that a recording holds it (see :func:`outcomes_from_records`).

Faults (no silent waits; see :mod:`r2s2r_eval.episodes.episode_watch`): while an episode runs, the policy must
acknowledge observations (``policy_heartbeat``); ``policy_timeout_s`` of silence, with the world still
answering, ends the episode as failed with reason ``policy_lost`` (the lockstep sim reports the same after its
``ack_timeout_s``). Then ``on_policy_lost: stop`` exits 1 with a message, ``continue`` waits for a restarted
policy (``respawn_policy:=true`` in the launchers) and goes on at the next seed. A world (sim or drivers) that
no longer answers ends the run with exit 1 and no row for the unfinished episode. Rows carry an
``episode_key`` (mode, policy, parameters, world, seed): the same command resumes at the next seed the store
lacks, without duplicates.
"""

from __future__ import annotations

import r2s2r_sim.ros.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from r2s2r_sim.ros import conversions as rc
from r2s2r_sim.ros.diagnostics import DiagnosticsPublisher, Reading, evaluation_reading
from r2s2r_sim.ros.params import (
    parameter_error,
    read_node_config,
    run_node,
    shut_down_executor,
    spin_until_shutdown,
)
from r2s2r_sim.ros.qos import declare_interface, interface_class, qos_profile
from r2s2r_sim.serving.liveness import Liveness
from rcl_interfaces.srv import GetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import UInt64
from std_srvs.srv import Trigger

from r2s2r_eval.episodes.episode_watch import (
    POLICY_LOST,
    Ending,
    EpisodeEnd,
    PolicyLostError,
    WorldLostError,
    episode_key,
    wait_episode_end,
)
from r2s2r_eval.episodes.evaluation import (
    PARAMETER_CONSTRAINTS,
    PARAMETER_DESCRIPTIONS,
    EvaluatorConfig,
    EvaluatorError,
    HookKind,
    Judgement,
    judgement_from_trigger,
    parse_hook,
    task_settle_s,
)
from r2s2r_eval.episodes.operator_prompt import OperatorPrompt, OperatorTimeout
from r2s2r_eval.episodes.results import EpisodeRow, ResultsError, ResultsStore, utc_now
from r2s2r_eval.policy import policy_params_from_yaml

OPERATOR_TIMEOUT = "operator_timeout"  # the failure reason of an episode the operator did not judge in time

__all__ = [
    "EvaluatorNode",
    "main",
]


class EvaluatorNode(Node):
    """Sequences episodes; the executor runs in a background thread while :meth:`run` waits on futures."""

    def __init__(self, *, stdin: TextIO | None = None, **kwargs: Any) -> None:
        """Read parameters and create the clients and the outcome subscription.

        ``stdin`` is where ``prompt`` hooks read the operator's answers (default ``sys.stdin``).

        Raises:
            EvaluatorError: an invalid parameter, or a ``prompt`` hook in real mode without a terminal.
        """
        super().__init__("evaluator_node", **kwargs)
        cfg = self.config = read_node_config(
            self,
            EvaluatorConfig,
            PARAMETER_DESCRIPTIONS,
            error=parameter_error(EvaluatorError),
            constraints=PARAMETER_CONSTRAINTS,
        )
        self._operator = OperatorPrompt(stdin if stdin is not None else sys.stdin, cfg.operator_timeout_s)
        self.reset_hook = parse_hook(cfg.reset_hook, "reset_hook")
        self.judge_hook = parse_hook(cfg.judge_hook, "judge_hook")
        if cfg.mode == "real":
            for name, hook in (("reset_hook", self.reset_hook), ("judge_hook", self.judge_hook)):
                if hook.kind is HookKind.PROMPT and not (stdin is not None or sys.stdin.isatty()):
                    raise EvaluatorError(
                        f"parameter {name}: 'prompt' needs an operator at a terminal, but the evaluator's "
                        "stdin is not a TTY (`r2s2r launch` gives its nodes no stdin): run evaluator_node in "
                        "a terminal of its own (launch with evaluate:=false), or use "
                        f"{name}:=service:<name>"
                    )
        self.policy_params = policy_params_from_yaml(cfg.policy_params, EvaluatorError)
        iface = declare_interface(self)
        reset_spec = iface.service_spec("reset_episode")
        self._reset_type = interface_class(reset_spec.type)
        self._sim_reset = self.create_client(self._reset_type, reset_spec.name)
        self._policy_reset = (
            self.create_client(self._reset_type, cfg.policy_reset_service)
            if cfg.policy_reset_service
            else None
        )
        out_spec = iface.topic_spec("episode_outcome")
        self._cv = threading.Condition()
        self._seed: int | None = None
        self._outcome: Any = None
        self.create_subscription(
            interface_class(out_spec.type),
            iface.topic("episode_outcome"),
            self._on_outcome,
            qos_profile(out_spec.subscription_qos),
        )
        self._done = False
        self.outcomes = {"succeeded": 0, "failed": 0}  # episodes whose outcome arrived
        self._diagnostics = DiagnosticsPublisher(
            self,
            iface,
            name="evaluation",
            hardware_id=cfg.world,
            counters=dict,
            read=self._diagnostics_reading,
        )
        # Liveness: the policy acknowledges every observation it answers; the world publishes joint states.
        ack_spec = iface.topic_spec("policy_heartbeat")
        self._ack_topic = iface.topic("policy_heartbeat")
        self._policy_alive = Liveness(cfg.policy_timeout_s)
        self.create_subscription(
            interface_class(ack_spec.type),
            self._ack_topic,
            lambda _msg: self._policy_alive.beat(),
            qos_profile(ack_spec.subscription_qos),
        )
        self._joint_topic = iface.topic("joint_states")
        self._probes: dict[str, Any] = {}
        self._planned = 0  # episodes this run has to do (those not in the results store yet)
        self._policy_gids: set[bytes] = set()  # the ack publishers of the episode's policy
        self._await_policy = False  # a policy was lost: wait for its restart at the next policy reset
        self._hook_reset = self._judge = self._outcome_pub = None
        self._settle_s = 0.0  # real mode: how long the arm holds after a done before the judge is asked
        if cfg.mode == "real":
            if self.reset_hook.kind is HookKind.SERVICE:
                self._hook_reset = self.create_client(self._reset_type, self.reset_hook.service)
            if self.judge_hook.kind is HookKind.SERVICE:
                self._judge = self.create_client(Trigger, self.judge_hook.service)
            self.create_subscription(UInt64, cfg.policy_done_topic, self._on_done, 10)
            self._settle_s = task_settle_s(cfg.world)
            # The judged verdict is published as the episode's outcome, so that recordings hold it.
            self._outcome_pub = self.create_publisher(
                interface_class(out_spec.type), iface.topic("episode_outcome"), qos_profile(out_spec.qos)
            )

    def _diagnostics_reading(self, _rates: Any) -> Reading:
        with self._cv:
            return evaluation_reading(self.config.episodes, dict(self.outcomes), self._seed)

    def _on_done(self, msg: Any) -> None:
        with self._cv:
            if self._seed is not None and int(msg.data) == self._seed:
                self._done = True
                self._cv.notify_all()

    def _on_outcome(self, msg: Any) -> None:
        with self._cv:
            if self._seed is not None and self._outcome is None and int(msg.variation_seed) == self._seed:
                self._outcome = msg
                self.outcomes["succeeded" if msg.success else "failed"] += 1
                self._cv.notify_all()

    def _call(self, client: Any, seed: int, *, retry_s: float | None = None) -> Any:
        """Call a ResetEpisode service; ``retry_s``: re-send every ``retry_s`` until service_timeout_s.

        Retrying is for a restarted server: DDS still lists the dead one for a while, and a request sent
        before the new server matched is never answered.
        """
        timeout = self.config.service_timeout_s
        deadline = time.monotonic() + timeout
        request = self._reset_type.Request(variation_seed=seed, variation_config="")
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not client.wait_for_service(timeout_sec=left):
                raise RuntimeError(f"service {client.srv_name} did not appear within {timeout} s")
            future = client.call_async(request)
            done = threading.Event()
            future.add_done_callback(lambda _, done=done: done.set())
            left = deadline - time.monotonic()
            if done.wait(max(0.0, min(left, retry_s or left))):
                break
            client.remove_pending_request(future)
            if time.monotonic() >= deadline:
                raise RuntimeError(f"service {client.srv_name} did not answer within {timeout} s")
        response = future.result()
        if not response.success:
            raise RuntimeError(f"service {client.srv_name} refused seed {seed}: {response.message}")
        return response

    def run(self) -> tuple[int, int]:
        """Run the episodes the results store lacks and store their rows; returns (episodes run, successes).

        Raises:
            RuntimeError: a reset service is missing or refuses; :class:`PolicyLostError` (the policy
                stopped answering and ``on_policy_lost`` is stop); :class:`WorldLostError`.
            ResultsError: the results file is not an r2s2r results database.
        """
        cfg = self.config
        if cfg.mode == "real":
            return self._run_real()
        successes = 0
        for client in (self._sim_reset, self._policy_reset):
            if client is not None and not client.wait_for_service(timeout_sec=cfg.service_timeout_s):
                raise RuntimeError(
                    f"service {client.srv_name} did not appear within {cfg.service_timeout_s} s"
                )
        time.sleep(cfg.startup_delay_s)
        with ResultsStore(cfg.results) as store:
            for i, seed, key in self._to_run(store):
                started = utc_now()
                with self._cv:
                    self._seed, self._outcome = None, None
                sim = self._call(self._sim_reset, seed)
                with self._cv:
                    self._seed = seed
                self._reset_policy(seed)
                ending = self._wait_end(lambda: self._outcome is not None, i, seed)
                with self._cv:
                    msg = self._outcome
                    self._seed = None
                if ending.end is EpisodeEnd.FINISHED and msg is not None:
                    success, reason = bool(msg.success), msg.failure_reason or "success"
                    duration = msg.duration.sec + msg.duration.nanosec * 1e-9
                    metrics = {m.name: m.value for m in msg.metrics}
                elif ending.end is EpisodeEnd.POLICY_LOST:
                    success, reason, duration, metrics = False, POLICY_LOST, ending.waited_s, {}
                else:
                    success, reason, duration, metrics = False, "evaluator_timeout", cfg.episode_timeout_s, {}
                store.add(
                    EpisodeRow(
                        policy=cfg.policy,
                        parameters=self.policy_params,
                        world_id=sim.world_id,
                        world_hash=sim.world_hash,
                        seed=seed,
                        success=success,
                        reason=reason if not success else "success",
                        duration_s=duration,
                        metrics=metrics,
                        started_at=started,
                        episode_key=key,
                    )
                )
                successes += int(success)
                self.get_logger().info(
                    f"episode {i} (seed {seed}): {'success' if success else reason} after {duration:.2f} s"
                )
                if reason == POLICY_LOST:
                    self._policy_lost(i, seed, ending.detail or "the world reported it")
        return self._planned, successes

    # ------------------------------------------------------------------------------ waits and faults

    def _to_run(self, store: ResultsStore) -> list[tuple[int, int, str]]:
        """(index, seed, episode key) of the episodes the store does not hold yet (resuming a run)."""
        cfg = self.config
        stored = store.episode_keys()
        todo = []
        for i in range(cfg.episodes):
            seed = cfg.seed0 + i
            key = episode_key(
                mode=cfg.mode, policy=cfg.policy, parameters=self.policy_params, world=cfg.world, seed=seed
            )
            if key not in stored:
                todo.append((i, seed, key))
        self._planned = len(todo)
        if len(todo) < cfg.episodes:
            self.get_logger().info(
                f"resuming: {cfg.episodes - len(todo)} of {cfg.episodes} episodes already in {cfg.results}; "
                + (f"going on at seed {todo[0][1]}" if todo else "nothing left to run")
            )
        return todo

    def _reset_policy(self, seed: int) -> None:
        """Reset the policy node (waiting for a restarted one after a loss) and arm its watchdog."""
        if self._policy_reset is not None:
            self._call(self._policy_reset, seed, retry_s=2.0 if self._await_policy else None)
            if self._await_policy:
                self.get_logger().info(f"the restarted policy answered; going on at seed {seed}")
            self._await_policy = False
        self._policy_alive.arm()
        self._policy_gids = self._ack_publishers()

    def _ack_publishers(self) -> set[bytes]:
        return {bytes(info.endpoint_gid) for info in self.get_publishers_info_by_topic(self._ack_topic)}

    def _policy_replaced(self) -> bool:
        """A new acknowledgement publisher appeared since the episode started: a restarted policy."""
        now = self._ack_publishers()
        if not self._policy_gids:
            self._policy_gids = now  # the policy's endpoints were not discovered yet at its reset
            return False
        return bool(now - self._policy_gids)

    def _wait_end(self, finished: Callable[[], bool], index: int, seed: int) -> Ending:
        """Wait for the episode's end; a lost world raises :class:`WorldLostError` (the row is not stored)."""
        cfg = self.config
        try:
            ending = wait_episode_end(
                self._cv,
                finished,
                timeout_s=cfg.episode_timeout_s,
                policy=self._policy_alive,
                policy_publishers=lambda: self.count_publishers(self._ack_topic),
                world_alive=lambda: self._publisher_answers(self._joint_topic),
                policy_alive=lambda: self._publisher_answers(self._ack_topic),
                what=self._ack_topic,
                policy_replaced=self._policy_replaced,
                on_silent=lambda silent: self.get_logger().warning(
                    f"episode {index} (seed {seed}): no acknowledgement from the policy for {silent:.1f} s, "
                    "but its node answers (holding on stale observations?); waiting on"
                ),
            )
        finally:
            self._policy_alive.disarm()
        if ending.end is EpisodeEnd.WORLD_LOST:
            raise WorldLostError(
                f"episode {index} (seed {seed}): the world is lost: {ending.detail} (the publisher of "
                f"{self._joint_topic} did not answer within {cfg.world_probe_timeout_s:g} s); stopping. "
                f"{cfg.results} holds every finished episode; the same command resumes at seed {seed}"
            )
        if ending.end is not EpisodeEnd.FINISHED:
            self.get_logger().warning(f"episode {index} (seed {seed}): {ending.end.value}: {ending.detail}")
        return ending

    def _publisher_answers(self, topic: str) -> bool:
        """Whether a node publishing ``topic`` answers a parameter request within world_probe_timeout_s.

        Asked of the world (joint states) and the policy (acks): alive, and its executor not stuck.
        """
        timeout = self.config.world_probe_timeout_s
        for info in self.get_publishers_info_by_topic(topic):
            if info.node_name == self.get_name() and info.node_namespace == self.get_namespace():
                continue
            service = f"{info.node_namespace.rstrip('/')}/{info.node_name}/get_parameters"
            client = self._probes.get(service)
            if client is None:
                client = self._probes[service] = self.create_client(GetParameters, service)
            if not client.wait_for_service(timeout_sec=timeout):
                continue
            future = client.call_async(GetParameters.Request(names=[]))
            done = threading.Event()
            future.add_done_callback(lambda _, done=done: done.set())
            if done.wait(timeout):
                return True
            client.remove_pending_request(future)
        return False

    def _policy_lost(self, index: int, seed: int, detail: str) -> None:
        """Stop the run, or wait for a restarted policy at the next episode (``on_policy_lost``)."""
        cfg = self.config
        if cfg.on_policy_lost == "stop":
            raise PolicyLostError(
                f"episode {index} (seed {seed}): policy lost ({detail}); recorded as {POLICY_LOST} in "
                f"{cfg.results}; stopping. Launch with respawn_policy:=true to restart the policy and go on"
            )
        self.get_logger().warning(
            f"episode {index} (seed {seed}): policy lost ({detail}); waiting up to "
            f"{cfg.service_timeout_s:g} s for a restarted policy at the next episode"
        )
        self._await_policy = True

    # ------------------------------------------------------------------------------------- real mode

    def _wait_future(self, client: Any, request: Any) -> Any:
        timeout = self.config.service_timeout_s
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"service {client.srv_name} did not appear within {timeout} s")
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            raise RuntimeError(f"service {client.srv_name} did not answer within {timeout} s")
        return future.result()

    def _ask(self, question: str) -> str:
        return self._operator.ask(question)

    def _reset_real(self, index: int, seed: int) -> tuple[str, str, str]:
        """Reset the cell through the reset hook; returns (world_id, world_hash, variation_hash)."""
        if self._hook_reset is None:
            self._ask(
                f"[evaluator] episode {index} (seed {seed}): reset the cell (arm home, cube placed), "
                "then press Enter: "
            )
            return self.config.world, "", ""
        request = self._reset_type.Request(variation_seed=seed, variation_config="")
        response = self._wait_future(self._hook_reset, request)
        if not response.success:
            raise RuntimeError(f"service {self._hook_reset.srv_name} refused seed {seed}: {response.message}")
        return response.world_id or self.config.world, response.world_hash, response.variation_hash

    def _judge_real(self, index: int, seed: int) -> Judgement:
        if self._judge is None:
            question = f"[evaluator] episode {index} (seed {seed}): success? [y/n] "
            while (answer := self._ask(question).lower()) not in ("y", "n"):
                print("answer y or n", flush=True)
            if answer == "y":
                return Judgement(success=True, reason="success", seed=seed)
            reason = self._ask("[evaluator] failure reason (Enter: not_achieved): ") or "not_achieved"
            return Judgement(success=False, reason=reason, seed=seed)
        response = self._wait_future(self._judge, Trigger.Request())
        judgement = judgement_from_trigger(bool(response.success), str(response.message))
        if judgement.seed is not None and judgement.seed != seed:
            self.get_logger().warning(f"judge reports seed {judgement.seed}, the episode's seed is {seed}")
        return judgement

    def _run_real(self) -> tuple[int, int]:
        """Real mode: reset hook, policy reset, wait for done/error/timeout, judge hook, row + outcome."""
        cfg = self.config
        successes = 0
        for client in (self._hook_reset, self._judge, self._policy_reset):
            if client is not None and not client.wait_for_service(timeout_sec=cfg.service_timeout_s):
                raise RuntimeError(
                    f"service {client.srv_name} did not appear within {cfg.service_timeout_s} s"
                )
        time.sleep(cfg.startup_delay_s)
        self.get_logger().info(
            f"real mode: reset {self.reset_hook}, judge {self.judge_hook}, episode end at "
            f"{cfg.policy_done_topic} or after {cfg.episode_timeout_s:g} s"
        )
        with ResultsStore(cfg.results) as store:
            for i, seed, key in self._to_run(store):
                with self._cv:
                    self._seed, self._outcome, self._done = None, None, False
                world_id, world_hash, var_hash = self._reset_real(i, seed)
                started, t0 = utc_now(), time.monotonic()
                with self._cv:
                    self._seed = seed
                self._reset_policy(seed)
                ending = self._wait_end(lambda: self._done or self._outcome is not None, i, seed)
                with self._cv:
                    error, done = self._outcome, self._done
                    self._seed = None
                if done and error is None and self._settle_s > 0:
                    # The one end-of-episode rule: the arm holds while the task settles, then the judge.
                    time.sleep(self._settle_s)
                duration = time.monotonic() - t0
                lost = ending.end is EpisodeEnd.POLICY_LOST
                end = (
                    "policy_error"
                    if error is not None
                    else "policy_done"
                    if done
                    else POLICY_LOST
                    if lost
                    else "timeout"
                )
                try:
                    judged = self._judge_real(i, seed)
                except OperatorTimeout as err:
                    # The episode ran: record it (unjudged, so not a success), then stop the run.
                    stop: OperatorTimeout | None = err
                    judged = Judgement(success=False, reason=OPERATOR_TIMEOUT, seed=seed)
                else:
                    stop = None
                success = judged.success and error is None and not lost
                reason = (
                    "success"
                    if success
                    else (
                        error.failure_reason if error is not None else POLICY_LOST if lost else judged.reason
                    )
                )
                store.add(
                    EpisodeRow(
                        policy=cfg.policy,
                        parameters=self.policy_params,
                        world_id=world_id,
                        world_hash=world_hash,
                        seed=seed,
                        success=success,
                        reason=reason,
                        duration_s=duration,
                        metrics=judged.metrics,
                        started_at=started,
                        variation={
                            "mode": "real",
                            "end": end,
                            "reset_hook": str(self.reset_hook),
                            "judge_hook": str(self.judge_hook),
                            "variation_hash": var_hash,
                        },
                        episode_key=key,
                    )
                )
                self._publish_outcome(
                    i, seed, world_id, world_hash, success, reason, duration, judged.metrics
                )
                successes += int(success)
                self.get_logger().info(
                    f"episode {i} (seed {seed}): {'success' if success else reason} after {duration:.2f} s "
                    f"(ended by {end}; judged by {self.judge_hook})"
                )
                if stop is not None:
                    raise stop
                if lost:
                    self._policy_lost(i, seed, ending.detail)
        return self._planned, successes

    def _publish_outcome(
        self,
        index: int,
        seed: int,
        world_id: str,
        world_hash: str,
        success: bool,
        reason: str,
        duration: float,
        metrics: dict[str, float],
    ) -> None:
        assert self._outcome_pub is not None
        self._outcome_pub.publish(
            rc.episode_outcome_msg(
                stamp=self.get_clock().now().to_msg(),
                episode_index=index,
                policy_id=self.config.policy,
                world_id=world_id,
                variation_seed=seed,
                world_hash=world_hash,
                success=success,
                failure_reason="" if success else reason,
                duration_s=duration,
                metrics=metrics,
            )
        )


def _run(node: EvaluatorNode) -> int:
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    # Not executor.spin: Ctrl-C shuts the context down under it, which it reports as an exception.
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor,), daemon=True)
    spinner.start()
    started = time.monotonic()
    try:
        total, ok = node.run()
        # The full path: a relative one is taken from wherever the graph was started.
        results = Path(node.config.results).resolve()
        node.get_logger().info(
            f"evaluator: {total} episodes, {ok} succeeded ({time.monotonic() - started:.1f} s wall) "
            f"-> {results}"
        )
        print(f"evaluator: {total} episodes, {ok} succeeded -> {results}", flush=True)
    except (RuntimeError, ResultsError) as err:
        node.get_logger().fatal(str(err))
        return 1
    finally:
        # Stop the spinning thread before the node and the context go away (else rclcpp aborts).
        shut_down_executor(executor, timeout_s=5.0)
        spinner.join(timeout=5.0)
    return 0


def main(args: Sequence[str] | None = None) -> int:
    """Run the evaluation; exit 0 when all episodes are stored, 1 on a configuration or service error."""
    return run_node(EvaluatorNode, args, "evaluator_node", spin=_run, errors=(EvaluatorError, ValueError))
