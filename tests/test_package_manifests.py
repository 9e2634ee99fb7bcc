"""Every import of the three Python packages is declared: a package.xml key, or requirements/distro.txt.

A ROS distro user installs with ``rosdep install`` (package.xml) and ``pip install -r
requirements/distro.txt``; an import covered by neither fails only on their machine.
"""

from __future__ import annotations

import ast
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("r2s2r_sim", "r2s2r_eval", "r2s2r_capture")
# Import name -> rosdep key (from ros/rosdistro rosdep/python.yaml); ROS packages are their own key.
ROSDEP = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "cv2": "python3-opencv",
    "transforms3d": "python3-transforms3d",
    "matplotlib": "python3-matplotlib",
    "tqdm": "python3-tqdm",
    "ruamel": "python3-ruamel.yaml",
    "open3d": "python3-open3d-pip",
    "psutil": "python3-psutil",
    "xacro": "xacro",
}
# Import name -> PyPI distribution, for what has no rosdep key.
PIP_ONLY = {
    "mujoco": "mujoco",
    "pybullet": "pybullet",
    "rosbags": "rosbags",
    "ray": "ray",
    "pyarrow": "pyarrow",
    "torch": "torch",
    "imageio_ffmpeg": "imageio-ffmpeg",
    "mcap": "mcap",
    "foxglove": "foxglove-sdk",
    "backports": "backports.zstd",
    "gymnasium": "gymnasium",
    "lerobot": "lerobot",
    "datasets": "datasets",
}
# Imported only inside a guarded branch: ``compression.zstd`` is the standard library's from Python 3.14,
# ``backports.zstd`` the same module before it; ``zstandard`` is what the mcap stream reader needs.
OPTIONAL = {"zstandard", "compression"}


def _imports(package: str) -> set[str]:
    names: set[str] = set()
    for path in (REPO / "src" / package / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {package, "__future__"}


def _depends(package: str) -> set[str]:
    root = ET.parse(REPO / "src" / package / "package.xml").getroot()
    return {e.text.strip() for e in root if e.tag in ("depend", "exec_depend") and e.text}


def _distro_requirements(name: str = "distro.txt") -> set[str]:
    lines = (REPO / "requirements" / name).read_text(encoding="utf-8").splitlines()
    return {line.split("==")[0].strip() for line in lines if line.strip() and not line.startswith("#")}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_import_is_declared(package: str) -> None:
    # learning-nodeps.txt: what both installs add with `pip install --no-deps` (its own comment says why).
    pip_only = _distro_requirements() | _distro_requirements("learning-nodeps.txt")
    depends = _depends(package)
    missing = []
    for name in sorted(_imports(package) - OPTIONAL):
        if name in PIP_ONLY:
            ok = PIP_ONLY[name] in pip_only
        else:
            ok = ROSDEP.get(name, name) in depends  # message packages, rclpy, r2s2r_* are keys themselves
        if not ok:
            missing.append(name)
    assert not missing, f"{package} imports {missing}: in neither package.xml nor requirements/distro.txt"


def test_distro_requirements_never_pin_what_the_distro_provides() -> None:
    pinned = _distro_requirements()
    assert not pinned & {"numpy", "opencv-python", "opencv-python-headless", "scipy", "pyyaml"}, pinned
    lines = (REPO / "requirements" / "constraints.txt").read_text().splitlines()
    constraints = dict(line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    for line in (REPO / "requirements" / "distro.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            # "==2.13.0" matches the pip-mode's local build "2.13.0+cpu" (PEP 440).
            pinned_there = constraints.get(name, "").split("+")[0]
            assert pinned_there == version, f"{name}=={version} differs from constraints.txt ({pinned_there})"
