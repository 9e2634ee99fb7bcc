"""Register the editable (pip-mode) r2s2r packages in the ament resource index of an install prefix.

``pip install -e`` installs the Python modules and console scripts but none of a package's
``data_files``, so ``ros2 launch r2s2r_sim world.launch.py``, ``ros2 pkg prefix`` and
``ament_index_python`` would not find the packages, their ``launch/`` and ``config/`` files or their
executables. This lays out, under a prefix on ``AMENT_PREFIX_PATH`` (the venv, which ``env.sh`` puts
there), what ``colcon build --symlink-install`` would:

- ``share/ament_index/resource_index/packages/<pkg>`` and every other ``data_files`` entry of the
  package's own ``setup.cfg`` (``package.xml``, ``launch/``, ``config/``), as symlinks to the checkout, so
  an edited config file is live at once;
- ``lib/<pkg>/<executable>`` for each console script, as symlinks to the one pip wrote in ``bin/``
  (where ``ros2 run`` and ``launch_ros`` look).

The package's setup (``setup.cfg``, read through ``setup.py`` as colcon reads it) stays the only list of
installed files: colcon installs the same ``data_files``. Re-running is idempotent; files an earlier run
registered but the setup no longer lists are removed.
A non-symlink in the way (a regular install of the package in the same prefix) is an error, never
overwritten.

Usage: ``python tools/register_ament_packages.py [--prefix PREFIX] [--bin BIN] SRC_PACKAGE_DIR...``
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import setuptools  # noqa: F401  (first: from Python 3.12 on it is what provides distutils)

INDEX = Path("share/ament_index/resource_index/packages")


class RegisterError(RuntimeError):
    """A package cannot be registered; the message names the file or package at fault."""


@dataclass(frozen=True, kw_only=True)
class Package:
    """What the setup of an ament_python package installs: its name, data files and executables."""

    name: str
    source: Path
    data_files: tuple[tuple[str, tuple[Path, ...]], ...]
    executables: tuple[str, ...]


def read_package(source: Path) -> Package:
    """Read what ``source/setup.py`` and its ``setup.cfg`` configure, as colcon does (nothing is built)."""
    from distutils.core import run_setup  # setuptools' own (imported above), as setup.py uses it

    setup_py = source / "setup.py"
    if not setup_py.is_file():
        raise RegisterError(f"{setup_py}: not found (an ament_python package needs a setup.py)")
    cwd = Path.cwd()
    try:
        os.chdir(source)  # setup.cfg and setup.py name their data files relative to their own folder
        dist = run_setup(str(setup_py), stop_after="config")
    finally:
        os.chdir(cwd)
    if not dist.metadata.name:
        raise RegisterError(f"{setup_py}: names no package (setup(name=...) or setup.cfg [metadata] name)")
    name = str(dist.metadata.name)
    data_files = tuple(
        (dest, tuple((source / src).resolve() for src in files)) for dest, files in dist.data_files or []
    )
    scripts = (dist.entry_points or {}).get("console_scripts", [])
    executables = tuple(entry.split("=", 1)[0].strip() for entry in scripts)
    if not any(Path(dest) == INDEX for dest, _ in data_files):
        raise RegisterError(f"{setup_py}: data_files has no {INDEX} marker for package '{name}'")
    return Package(name=name, source=source, data_files=data_files, executables=executables)


def _links(package: Package, prefix: Path, bin_dir: Path) -> dict[Path, Path]:
    links: dict[Path, Path] = {}
    for dest, files in package.data_files:
        for src in files:
            if not src.is_file():
                raise RegisterError(f"{package.source / 'setup.py'}: data file {src} does not exist")
            links[prefix / dest / src.name] = src
    for exe in package.executables:
        script = bin_dir / exe
        if not script.is_file():
            raise RegisterError(
                f"console script {script} of package '{package.name}' is missing; "
                f"install the package first (pip install -e {package.source})"
            )
        links[prefix / "lib" / package.name / exe] = script
    return links


def _owned_dirs(package: Package, prefix: Path) -> Iterable[Path]:
    # The folders only this package installs into; stale symlinks there are removed.
    return (prefix / "share" / package.name, prefix / "lib" / package.name)


def register(package: Package, prefix: Path, bin_dir: Path) -> list[Path]:
    """Create the package's links under ``prefix``; return the links created or changed.

    Raises:
        RegisterError: a data file or console script is missing, or a non-symlink is in the way.
    """
    links = _links(package, prefix, bin_dir)
    for link in links:
        if link.exists() and not link.is_symlink():
            raise RegisterError(
                f"{link} exists and is not a symlink (is {package.name} also installed "
                f"without -e in {prefix}?); remove it to register the editable package"
            )
    for folder in _owned_dirs(package, prefix):
        for path in sorted(folder.rglob("*"), reverse=True) if folder.is_dir() else []:
            if path.is_symlink() and path not in links:
                path.unlink()
            elif path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                path.rmdir()
    changed = []
    for link, target in links.items():
        if link.is_symlink() and link.resolve() == target:
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        changed.append(link)
    return changed


def main(argv: list[str] | None = None) -> int:
    """Register each package folder given; print what changed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prefix",
        type=Path,
        default=Path(sys.prefix),
        help="install prefix on AMENT_PREFIX_PATH (default: this Python's, the venv)",
    )
    parser.add_argument(
        "--bin", type=Path, default=None, help="folder of the packages' console scripts (default: PREFIX/bin)"
    )
    parser.add_argument("packages", type=Path, nargs="+", help="package folders (with setup.py)")
    ns = parser.parse_args(argv)
    prefix = ns.prefix.resolve()
    bin_dir = (ns.bin or prefix / "bin").resolve()
    try:
        for source in ns.packages:
            package = read_package(source.resolve())
            changed = register(package, prefix, bin_dir)
            if changed:
                print(f"registered {package.name} in {prefix}: {len(changed)} links")
    except RegisterError as err:
        print(f"register_ament_packages: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
