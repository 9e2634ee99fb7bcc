"""``ros2 launch r2s2r_sim world.launch.py`` for real: the shipped file, found through the ament index.

Each run starts outside the repository (``cwd`` is a temporary folder), so nothing may be resolved
against the current directory: the launch file, the node parameter files and the interface come from
the package's share folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_sim.graph.node_graph import load_graph
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import world_path
from ros2_tools import requires_ros2_tools, ros2

pytestmark = [pytest.mark.integration, requires_ros2_tools]

WORLD = "tabletop-pick-v1"
TIME_LIMIT_S = load_world_config(world_path(WORLD)).task.timeout  # the episode limit (s, sim time)
RUN_S = 900.0  # two episodes with the camera rendering on a loaded 2-core machine


def _launch(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = ros2(["launch", "r2s2r_sim", "world.launch.py", *args], env, timeout=RUN_S, cwd=str(cwd))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"ros2 launch exited with {proc.returncode}: {_failures(out)}"
    return out


def _node_output(out: str, process: str) -> str:
    """Every line launch printed for ``process`` (e.g. ``policy_node-2``): its stdout, stderr and exit."""
    return "\n".join(line for line in out.splitlines() if f"[{process}]" in line)


def _failures(out: str) -> str:
    """The whole output of each process that did not finish cleanly, else the end of the launch's output.

    A traceback printed while a node stops is the one clue to a flaky exit; the last few thousand
    characters of two episodes' logs seldom still hold it.
    """
    died = re.findall(r"\[ERROR\] \[([\w-]+)\]: process has died", out)
    return "\n\n".join(_node_output(out, name) for name in died) or out[-6000:]


def test_show_args_lists_every_graph_argument(ros_env: dict[str, str], tmp_path: Path) -> None:
    out = _launch(ros_env, tmp_path, "--show-args")
    for arg in load_graph("world").arguments:
        assert f"'{arg.name}':" in out, out
        assert f"(default: '{arg.default}')" in out, arg.name
        assert arg.description.split(";")[0] in " ".join(out.split()), arg.name
    assert "Valid choices are: ['sim', 'real']" in out


def _episodes(db: Path) -> list:
    with ResultsStore(db) as store:
        return list(store.rows())


@pytest.mark.timeout(RUN_S + 60)
def test_sim_mode_runs_two_episodes_to_completion(ros_env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    out = _launch(ros_env, tmp_path, "mode:=sim", "episodes:=2", f"results:={db}")
    rows = _episodes(db)
    assert [row.seed for row in rows] == [0, 1], _failures(out)
    for row in rows:
        assert row.world_id == WORLD and len(row.world_hash) == 64 and row.policy == "reference"
        assert row.reason == "success" if row.success else row.reason != "success"
        # The evaluator's wall-clock limit per episode can end one on a heavily loaded machine; any
        # other end is the task's verdict, with its metrics, within the world's time limit (sim time).
        if row.reason != "evaluator_timeout":
            assert 0.0 < row.duration_s <= TIME_LIMIT_S and "object_to_target_m" in row.metrics, row
    succeeded = sum(row.success for row in rows)
    assert f"evaluator: 2 episodes, {succeeded} succeeded" in out
    # The evaluator is required: its clean exit ends the launch, which stops the others with SIGINT.
    assert "process[evaluator_node-3] was required: shutting down launched system" in out
    for node in ("sim_node-1", "policy_node-2", "evaluator_node-3"):
        assert f"[INFO] [{node}]: process has finished cleanly" in out, _node_output(out, node)


@pytest.mark.timeout(RUN_S + 60)
def test_real_mode_on_the_emulated_hardware_runs_two_episodes(
    ros_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "results.sqlite"
    out = _launch(ros_env, tmp_path, "mode:=real", "emulate_hardware:=true", "episodes:=2", f"results:={db}")
    rows = _episodes(db)
    assert [row.seed for row in rows] == [0, 1], _failures(out)
    for row in rows:
        assert row.world_id == WORLD and row.policy == "reference"
        assert row.variation is not None and row.variation["mode"] == "real"
        assert row.variation["judge_hook"] == "service:/emulated_hardware/judge"
        assert row.reason in ("success", "not_achieved", "object_dropped") or row.reason.startswith(
            "policy_error"
        ), row.reason
    assert "[sim_node-" not in out  # real mode never starts the simulator
    for node in ("emulated_hardware_node-1", "policy_node-2", "evaluator_node-3"):
        assert f"[INFO] [{node}]: process has finished cleanly" in out, _node_output(out, node)
