"""Shared files are found through the package, never the current directory; the ament index registration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from r2s2r_sim.paths import config_dir, launch_dir
from r2s2r_sim.variations import load_variation_config
from r2s2r_sim.variations.engine import for_world
from r2s2r_sim.worlds import world_path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import register_ament_packages as reg  # noqa: E402


def test_code_run_from_the_checkout_uses_the_checkouts_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the current directory plays no part
    assert config_dir() == REPO / "config"
    assert launch_dir() == REPO / "launch"


def test_sweep_default_variations_come_from_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from r2s2r_eval.cli.sweep import COMMAND, sweep_config

    monkeypatch.chdir(tmp_path)
    ns = COMMAND.parser().parse_args(["--policy", "reference"])
    assert ns.variations is None
    shipped = load_variation_config(REPO / "config" / "variations.yaml")
    # The shipped file names no arm joints; the sweep fills in the world's before any episode.
    assert not shipped.robot_state.joints
    assert sweep_config(ns).variations == for_world(shipped, world_path("tabletop-pick-v1"), check=False)


def test_capture_default_profile_comes_from_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from r2s2r_capture.cli import real2sim as real2sim_cli

    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    real2sim_cli.register_capture(parser.add_subparsers())
    ns = parser.parse_args(["capture", "--emulated", "-o", "bag"])
    assert ns.profile is None
    default = config_dir() / "emulated_hardware" / "realistic_profile.yaml"
    assert real2sim_cli.profile_path(ns.profile) == default
    assert real2sim_cli.profile_path(ns.profile).is_file()


def test_setup_registered_the_packages_in_the_ament_index() -> None:
    # make setup registers the editable packages under the venv prefix (on AMENT_PREFIX_PATH via env.sh).
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    share = Path(get_package_share_directory("r2s2r_sim"))
    for name in ("config/interface.yaml", "config/sim_node.yaml", "launch/world.launch.py", "package.xml"):
        assert (share / name).is_file(), name
    assert (share / "config" / "interface.yaml").resolve() == REPO / "config" / "interface.yaml", (
        "the ament index points at another checkout: run `make setup` in this one"
    )
    executables = (
        ("r2s2r_sim", "sim_node"),
        ("r2s2r_eval", "evaluator_node"),
        ("r2s2r_capture", "recorder_node"),
    )
    for pkg, exe in executables:
        assert (Path(get_package_prefix(pkg)) / "lib" / pkg / exe).is_file(), (pkg, exe)


def _package(tmp_path: Path, *, data: tuple[str, ...] = ("launch/a.launch.py", "config/b.yaml")) -> Path:
    """A minimal ament_python package whose setup.py lists data files in a repository-level folder."""
    repo = tmp_path / "repo"
    src = repo / "src" / "demo_pkg"
    (src / "resource").mkdir(parents=True, exist_ok=True)
    (src / "resource" / "demo_pkg").write_text("")
    (src / "package.xml").write_text("<package format='3'><name>demo_pkg</name></package>\n")
    for rel in data:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(rel)
    entries = [("share/demo_pkg/" + str(Path(rel).parent), ["../../" + rel]) for rel in data]
    (src / "setup.py").write_text(
        "from setuptools import setup\n"
        "setup(name='demo_pkg', data_files=[\n"
        "    ('share/ament_index/resource_index/packages', ['resource/demo_pkg']),\n"
        "    ('share/demo_pkg', ['package.xml']),\n"
        f"    *{entries!r}],\n"
        "    entry_points={'console_scripts': ['demo_node = demo_pkg.node:main']})\n"
    )
    return src


def _bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "demo_node").write_text("#!/bin/sh\n")
    return bin_dir


def test_register_lays_out_what_colcon_would(tmp_path: Path) -> None:
    src, bin_dir, prefix = _package(tmp_path), _bin(tmp_path), tmp_path / "prefix"
    package = reg.read_package(src)
    assert package.name == "demo_pkg" and package.executables == ("demo_node",)
    changed = reg.register(package, prefix, bin_dir)
    assert len(changed) == 5
    assert (prefix / "share/ament_index/resource_index/packages/demo_pkg").is_file()
    assert (prefix / "share/demo_pkg/launch/a.launch.py").resolve() == tmp_path / "repo/launch/a.launch.py"
    assert (prefix / "share/demo_pkg/config/b.yaml").read_text() == "config/b.yaml"
    assert (prefix / "lib/demo_pkg/demo_node").resolve() == bin_dir / "demo_node"
    assert reg.register(package, prefix, bin_dir) == []  # idempotent


def test_register_reads_a_package_declared_in_setup_cfg(tmp_path: Path) -> None:
    # The r2s2r packages declare everything in setup.cfg (data file globs included); setup.py calls setup().
    src = _package(tmp_path)
    (src / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (src / "setup.cfg").write_text(
        "[metadata]\nname = demo_pkg\n"
        "[options.data_files]\n"
        "share/ament_index/resource_index/packages = resource/demo_pkg\n"
        "share/demo_pkg = package.xml\n"
        "share/demo_pkg/launch = ../../launch/*.*\n"
        "[options.entry_points]\nconsole_scripts =\n    demo_node = demo_pkg.node:main\n"
    )
    package = reg.read_package(src)
    assert package.name == "demo_pkg" and package.executables == ("demo_node",)
    assert dict(package.data_files)["share/demo_pkg/launch"] == (tmp_path / "repo/launch/a.launch.py",)
    prefix = tmp_path / "prefix"
    assert len(reg.register(package, prefix, _bin(tmp_path))) == 4  # marker, package.xml, launch, node
    assert (prefix / "share/demo_pkg/launch/a.launch.py").resolve() == tmp_path / "repo/launch/a.launch.py"


def test_register_removes_what_setup_py_no_longer_lists(tmp_path: Path) -> None:
    bin_dir, prefix = _bin(tmp_path), tmp_path / "prefix"
    reg.register(reg.read_package(_package(tmp_path)), prefix, bin_dir)
    src = _package(tmp_path, data=("launch/a.launch.py",))
    reg.register(reg.read_package(src), prefix, bin_dir)
    assert not (prefix / "share/demo_pkg/config").exists()
    assert (prefix / "share/demo_pkg/launch/a.launch.py").is_file()


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("installed", r"b\.yaml exists and is not a symlink"),
        ("no_script", r"console script .*demo_node of package 'demo_pkg' is missing"),
        ("no_marker", r"setup\.py: data_files has no share/ament_index/resource_index/packages marker"),
        ("no_setup", r"setup\.py: not found"),
    ],
)
def test_register_failures_name_the_file(tmp_path: Path, breakage: str, message: str) -> None:
    src, bin_dir, prefix = _package(tmp_path), _bin(tmp_path), tmp_path / "prefix"
    if breakage == "installed":  # a regular (copied) install of the package in the same prefix
        (prefix / "share/demo_pkg/config").mkdir(parents=True)
        (prefix / "share/demo_pkg/config/b.yaml").write_text("copied")
    elif breakage == "no_script":
        (bin_dir / "demo_node").unlink()
    elif breakage == "no_marker":
        text = (src / "setup.py").read_text().replace("share/ament_index/resource_index/packages", "share/x")
        (src / "setup.py").write_text(text)
    else:
        (src / "setup.py").unlink()
    with pytest.raises(reg.RegisterError, match=message):
        reg.register(reg.read_package(src), prefix, bin_dir)
    if breakage == "installed":
        assert (prefix / "share/demo_pkg/config/b.yaml").read_text() == "copied"  # never overwritten


def test_sweep_takes_a_shipped_hardware_profile_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from r2s2r_eval.cli.sweep import COMMAND, sweep_config

    monkeypatch.chdir(tmp_path)
    ns = COMMAND.parser().parse_args(["--policy", "reference", "--profile", "realistic"])
    realistic = config_dir() / "emulated_hardware" / "realistic_profile.yaml"
    assert sweep_config(ns).hardware_profile == str(realistic)
