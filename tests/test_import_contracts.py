"""The import contracts: each package's layers, and the ROS boundary.

``lint-imports`` checks the contracts in ``pyproject.toml`` statically (every import, in functions too); the
probe imports every core module in a fresh interpreter and runs episodes, so an import that only happens at
run time cannot cross the boundary either.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The ROS boundary: only these folders may import rclpy or message packages. Everything else is core.
BOUNDARY = ("r2s2r_sim.ros", "r2s2r_capture.ros", "r2s2r_eval.nodes")
PACKAGES = ("r2s2r_sim", "r2s2r_capture", "r2s2r_eval")


def _modules() -> list[str]:
    """Every module of the three packages, from the source tree (no import needed to list them)."""
    names = []
    for pkg in PACKAGES:
        root = REPO / "src" / pkg
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if "worlds" in parts:
                continue
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


CORE_MODULES = tuple(m for m in _modules() if not m.startswith(BOUNDARY))

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


def test_import_contracts_hold() -> None:
    """Layers of r2s2r_sim and r2s2r_capture, and the ROS boundary, as ``lint-imports`` checks them."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    if not lint_imports.exists():
        raise AssertionError(f"{lint_imports} is missing: run `make test` (it installs import-linter)")
    proc = subprocess.run(
        [str(lint_imports), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "BROKEN" not in proc.stdout


def test_every_subpackage_is_in_a_layer() -> None:
    """A new folder cannot escape the contracts: every subpackage of the sim and capture is a named layer."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    for pkg in ("r2s2r_sim", "r2s2r_capture"):
        (contract,) = [c for c in config if c["type"] == "layers" and c["containers"] == [pkg]]
        named = {n.strip() for layer in contract["layers"] for n in layer.split("|")}
        root = REPO / "src" / pkg / pkg
        subs = {p.parent.name for p in root.glob("*/__init__.py") if p.parent.name != "worlds"}
        mods = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
        assert subs | mods <= named, (
            f"{pkg}: not in any layer of pyproject.toml: {sorted((subs | mods) - named)}"
        )
