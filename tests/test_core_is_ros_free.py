"""The cores import neither rclpy nor a message package, so they run with only ``pip install``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Every core module: the world, its task and variations, rendering, the cells, the serving core of the
# driver-topic nodes, the episode runner, the sweep and studies' engine, metrics and comparison, and the
# policies.
CORE_MODULES = (
    "r2s2r_sim.world.sim_world",
    "r2s2r_sim.world.config",
    "r2s2r_sim.tasks.registry",
    "r2s2r_sim.variations",
    "r2s2r_sim.variations.engine",
    "r2s2r_sim.render.renderer",
    "r2s2r_sim.cells.sim_cell",
    "r2s2r_sim.hardware.emulated_arm",
    "r2s2r_sim.hardware.profile",
    "r2s2r_sim.hardware.emulated_camera",
    "r2s2r_sim.cells.emulated_cell",
    "r2s2r_sim.serving.loop",
    "r2s2r_sim.serving.sim_server",
    "r2s2r_sim.serving.sim_server_config",
    "r2s2r_eval.policy",
    "r2s2r_eval.episodes.sensor_arrays",
    "r2s2r_eval.episodes.runner",
    "r2s2r_eval.episodes.executors",
    "r2s2r_eval.episodes.sweep",
    "r2s2r_eval.episodes.sweep_plan",
    "r2s2r_eval.episodes.results",
    "r2s2r_eval.analysis.metrics",
    "r2s2r_eval.analysis.failure_regions",
    "r2s2r_eval.analysis.failure_tree",
    "r2s2r_eval.analysis.compare",
    "r2s2r_eval.policies.reference.policy",
    "r2s2r_eval.policies.topdown.policy",
)

# Runs in a fresh interpreter: import each module in turn (argv[1], JSON), then, when argv[2] names the
# repository, run a short episode of each policy on the simulated and on the emulated cell (their lazy
# imports included); print which module pulled in which ROS packages.
_PROBE = textwrap.dedent(
    """
    import importlib, json, sys
    from pathlib import Path

    def ros(names):
        return sorted(
            n for n in names
            if n.split(".")[0] == "rclpy" or n.split(".")[0].startswith("rosidl")
            or n.split(".")[0].endswith(("_msgs", "_interfaces", "_srvs"))
        )

    found = {}
    for name in json.loads(sys.argv[1]):
        before = set(sys.modules)
        importlib.import_module(name)
        new = ros(set(sys.modules) - before)
        if new:
            found[name] = new
    if len(sys.argv) > 2:
        from r2s2r_eval.policy import load_policy
        from r2s2r_eval.episodes.runner import EpisodeRunner
        from r2s2r_sim.cells.emulated_cell import EmulatedCell

        before = set(sys.modules)
        profile = Path(sys.argv[2]) / "config/emulated_hardware/ideal_profile.yaml"
        for cell in ("tabletop-pick-v1", EmulatedCell("tabletop-pick-v1", profile)):
            with EpisodeRunner(cell) as runner:
                for policy in ("reference", "topdown"):
                    result = runner.run(load_policy(policy), 0, camera_rate_hz=1.0, max_steps=2)
                    assert result.steps == 2, result.reason
        new = ros(set(sys.modules) - before)
        if new:
            found["episodes on the sim and emulated cells"] = new
    print(json.dumps(found))
    """
)


def _probe(*args: str) -> dict[str, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_core_modules_import_no_ros_package() -> None:
    found = _probe(json.dumps(CORE_MODULES), str(REPO))
    assert found == {}, f"core modules that import ROS packages: {found}"


def test_the_probe_reports_a_message_package() -> None:
    """The check can fail: the ROS adapter's conversions module is reported with its message packages."""
    found = _probe(json.dumps(["r2s2r_sim.ros.conversions"]))
    assert list(found) == ["r2s2r_sim.ros.conversions"]
    assert any(n.split(".")[0].endswith("_msgs") for n in found["r2s2r_sim.ros.conversions"]), found
