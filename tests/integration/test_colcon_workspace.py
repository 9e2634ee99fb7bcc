"""A colcon build of the whole repository, as a ROS distro user does it, installs what ros2 launch needs.

The workspace is built into a temporary install base (plain ``colcon build``: installed copies, not
links into the checkout), sourced with its own ``setup.bash``, and the shipped launch file is run from
it. The checks make sure the run used that install: its package prefix, its Python modules and the
configuration they find through the ament index.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import ResultsStore
from ros2_tools import requires_ros2_tools

pytestmark = [
    pytest.mark.integration,
    requires_ros2_tools,
    pytest.mark.skipif(
        shutil.which("colcon") is None,
        reason="colcon is not installed (make setup installs colcon-common-extensions)",
    ),
]

REPO = Path(__file__).resolve().parents[2]
BUILD_S = 1200.0  # r2s2r_msgs' C/C++ typesupport and three Python packages on a loaded 2-core machine
RUN_S = 900.0


def _in_workspace(
    install: Path, args: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` in a bash that sourced ``install/setup.bash`` (paths as arguments, no interpolation)."""
    script = 'source "$1/setup.bash" && shift && exec "$@"'
    try:
        return subprocess.run(
            ["bash", "-c", script, "_", str(install), *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise AssertionError(
            f"{args} did not finish within {timeout} s: {err.stdout!r} {err.stderr!r}"
        ) from None


@pytest.mark.timeout(BUILD_S + RUN_S + 120)
def test_workspace_build_then_ros2_launch_from_its_install(ros_env: dict[str, str], tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    build = subprocess.run(
        [
            "colcon",
            "--log-base",
            str(ws / "log"),
            "build",
            "--base-paths",
            str(REPO),
            "--build-base",
            str(ws / "build"),
            "--install-base",
            str(ws / "install"),
            "--event-handlers",
            "console_direct-",
            "console_stderr-",
            "status-",
            "--cmake-args",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DBUILD_TESTING=OFF",
        ],
        env=ros_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=BUILD_S,
        check=False,
    )
    assert build.returncode == 0, (build.stdout + build.stderr)[-6000:]
    install = ws / "install"
    built = sorted(p.name for p in install.iterdir() if (p / "share" / p.name / "package.xml").is_file())
    assert built == ["r2s2r_capture", "r2s2r_eval", "r2s2r_msgs", "r2s2r_sim"], built
    share = install / "r2s2r_sim" / "share" / "r2s2r_sim"
    shipped = (
        "launch/world.launch.py",
        "config/interface.yaml",
        "config/emulated_hardware/ideal_profile.yaml",
    )
    for name in shipped:
        assert (share / name).is_file() and not (share / name).is_symlink(), name

    prefix = _in_workspace(install, ["ros2", "pkg", "prefix", "r2s2r_sim"], ros_env, tmp_path, 120)
    assert prefix.stdout.strip() == str(install / "r2s2r_sim"), prefix
    where = _in_workspace(
        install,
        [sys.executable, "-c", "import r2s2r_sim.paths as p; print(p.__file__); print(p.config_dir())"],
        ros_env,
        tmp_path,
        120,
    )
    module, config = where.stdout.split()
    assert Path(module).is_relative_to(install), where
    assert Path(config) == share / "config", where

    db = tmp_path / "results.sqlite"
    launch = ["ros2", "launch", "r2s2r_sim", "world.launch.py", "mode:=sim", "episodes:=1", f"results:={db}"]
    run = _in_workspace(install, launch, ros_env, tmp_path, RUN_S)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    with ResultsStore(db) as store:
        rows = list(store.rows())
    assert [(r.seed, r.world_id, r.policy) for r in rows] == [(0, "tabletop-pick-v1", "reference")], out
    assert "[INFO] [evaluator_node-3]: process has finished cleanly" in out
