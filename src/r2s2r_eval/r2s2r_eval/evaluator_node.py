"""evaluator_node: drives N episodes through the reset services and stores each outcome in SQLite.

For episode i it calls the world's reset service with seed ``seed0 + i``, then the policy node's
``~/reset_episode`` (if ``policy_reset_service`` is set), waits for the first ``EpisodeOutcome`` with that
seed (from the sim's task checker or a policy error) or ``episode_timeout_s`` of wall time, and writes one
row to ``results``. When done it logs ``evaluator: N episodes, K succeeded`` and exits 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import rclpy
import yaml
from r2s2r_sim.interface import load_interface
from r2s2r_sim.ros_qos import interface_class, qos_profile
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from r2s2r_eval.results import EpisodeRow, ResultsError, ResultsStore, utc_now

__all__ = ["EvaluatorConfig", "EvaluatorError", "EvaluatorNode", "main"]


class EvaluatorError(ValueError):
    """An invalid parameter of the evaluator: names the parameter, the value and what is allowed."""


@dataclass(frozen=True, kw_only=True)
class EvaluatorConfig:
    """The evaluator's parameters (see ``config/evaluator_node.yaml``)."""

    episodes: int = 10
    seed0: int = 0
    results: str = "out/results.sqlite"
    policy: str = "reference"
    policy_params: str = "{}"
    policy_reset_service: str = "/policy_node/reset_episode"
    episode_timeout_s: float = 120.0
    service_timeout_s: float = 60.0
    startup_delay_s: float = 2.0

    def __post_init__(self) -> None:
        if self.episodes < 1:
            raise EvaluatorError(f"parameter episodes: got {self.episodes}; allowed: an integer >= 1")
        if not self.results:
            raise EvaluatorError("parameter results: must name an SQLite file, got ''")
        if not 0.0 <= self.startup_delay_s <= 600.0:
            raise EvaluatorError(
                f"parameter startup_delay_s: got {self.startup_delay_s}; allowed: [0, 600] s"
            )
        for name in ("episode_timeout_s", "service_timeout_s"):
            value = getattr(self, name)
            if not 0.1 <= value <= 86400.0:
                raise EvaluatorError(f"parameter {name}: got {value}; allowed: [0.1, 86400] s")


_DESCRIPTIONS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "episodes": ("Number of episodes N.", (1, 1_000_000)),
    "seed0": ("Seed of the first episode; episode i uses seed0 + i.", (0, 2**62)),
    "results": ("SQLite results file (created if missing; must be an r2s2r results database).", None),
    "policy": ("Policy name recorded in each row (as given to the policy node).", None),
    "policy_params": ("YAML mapping of the policy's parameters, recorded in each row.", None),
    "policy_reset_service": ("The policy node's ResetEpisode service; empty: do not call one.", None),
    "episode_timeout_s": ("Wall-clock limit (s) to wait for an episode's outcome.", (0.1, 86400.0)),
    "service_timeout_s": ("Wall-clock limit (s) for each service to appear and answer.", (0.1, 86400.0)),
    "startup_delay_s": (
        "Wall time (s) to let DDS discovery settle after the services appear, before the "
        "first reset (best-effort images published before the policy subscribes are lost).",
        (0.0, 600.0),
    ),
}


def _read_config(node: Node) -> EvaluatorConfig:
    defaults = EvaluatorConfig()
    values: dict[str, Any] = {}
    for name, (text, bounds) in _DESCRIPTIONS.items():
        default = getattr(defaults, name)
        desc = ParameterDescriptor(description=text, read_only=True)
        if bounds is not None and isinstance(default, int):
            desc.integer_range = [IntegerRange(from_value=int(bounds[0]), to_value=int(bounds[1]), step=1)]
        elif bounds is not None:
            desc.floating_point_range = [
                FloatingPointRange(from_value=bounds[0], to_value=bounds[1], step=0.0)
            ]
        try:
            values[name] = node.declare_parameter(name, default, desc).value
        except (
            rclpy.exceptions.InvalidParameterTypeException,
            rclpy.exceptions.InvalidParameterValueException,
        ) as err:
            raise EvaluatorError(f"parameter {name}: {err}") from None
    return EvaluatorConfig(**values)


class EvaluatorNode(Node):
    """Sequences episodes; the executor runs in a background thread while :meth:`run` waits on futures."""

    def __init__(self, **kwargs: Any) -> None:
        """Read parameters and create the clients and the outcome subscription.

        Raises:
            EvaluatorError: an invalid parameter.
        """
        super().__init__("evaluator_node", **kwargs)
        cfg = self.config = _read_config(self)
        try:
            params = yaml.safe_load(cfg.policy_params) or {}
        except yaml.YAMLError as err:
            raise EvaluatorError(f"parameter policy_params: not valid YAML: {err}") from None
        if not isinstance(params, dict):
            raise EvaluatorError(
                f"parameter policy_params: must be a YAML mapping, got {cfg.policy_params!r}"
            )
        self.policy_params = params
        iface = load_interface()
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
            qos_profile(out_spec.qos),
        )

    def _on_outcome(self, msg: Any) -> None:
        with self._cv:
            if self._seed is not None and self._outcome is None and int(msg.variation_seed) == self._seed:
                self._outcome = msg
                self._cv.notify_all()

    def _call(self, client: Any, seed: int) -> Any:
        timeout = self.config.service_timeout_s
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"service {client.srv_name} did not appear within {timeout} s")
        request = self._reset_type.Request(variation_seed=seed, variation_config="")
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            raise RuntimeError(f"service {client.srv_name} did not answer within {timeout} s")
        response = future.result()
        if not response.success:
            raise RuntimeError(f"service {client.srv_name} refused seed {seed}: {response.message}")
        return response

    def run(self) -> tuple[int, int]:
        """Run all episodes and store their rows; returns (episodes, successes).

        Raises:
            RuntimeError: a reset service is missing or refuses.
            ResultsError: the results file is not an r2s2r results database.
        """
        cfg = self.config
        successes = 0
        for client in (self._sim_reset, self._policy_reset):
            if client is not None and not client.wait_for_service(timeout_sec=cfg.service_timeout_s):
                raise RuntimeError(
                    f"service {client.srv_name} did not appear within {cfg.service_timeout_s} s"
                )
        time.sleep(cfg.startup_delay_s)
        with ResultsStore(cfg.results) as store:
            for i in range(cfg.episodes):
                seed = cfg.seed0 + i
                started = utc_now()
                with self._cv:
                    self._seed, self._outcome = None, None
                sim = self._call(self._sim_reset, seed)
                with self._cv:
                    self._seed = seed
                if self._policy_reset is not None:
                    self._call(self._policy_reset, seed)
                with self._cv:
                    got = self._cv.wait_for(lambda: self._outcome is not None, cfg.episode_timeout_s)
                    msg = self._outcome
                    self._seed = None
                if got and msg is not None:
                    success, reason = bool(msg.success), msg.failure_reason or "success"
                    duration = msg.duration.sec + msg.duration.nanosec * 1e-9
                    metrics = {m.name: m.value for m in msg.metrics}
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
                    )
                )
                successes += int(success)
                self.get_logger().info(
                    f"episode {i} (seed {seed}): {'success' if success else reason} after {duration:.2f} s"
                )
        return cfg.episodes, successes


def main(args: Sequence[str] | None = None) -> int:
    """Run the evaluation; exit 0 when all episodes are stored, 1 on a configuration or service error."""
    rclpy.init(args=args)
    code = 0
    try:
        try:
            node = EvaluatorNode()
        except (EvaluatorError, ValueError) as err:
            rclpy.logging.get_logger("evaluator_node").fatal(str(err))
            return 1
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        started = time.monotonic()
        try:
            total, ok = node.run()
            node.get_logger().info(
                f"evaluator: {total} episodes, {ok} succeeded ({time.monotonic() - started:.1f} s wall)"
            )
            print(f"evaluator: {total} episodes, {ok} succeeded", flush=True)
        except (RuntimeError, ResultsError) as err:
            node.get_logger().fatal(str(err))
            code = 1
        finally:
            # Stop the spinning thread before the node and the context go away (else rclcpp aborts).
            executor.shutdown(timeout_sec=5.0)
            spinner.join(timeout=5.0)
            node.destroy_node()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()
    return code
