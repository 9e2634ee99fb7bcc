"""ament_python package r2s2r_sim: installable with colcon (ROS distro) or pip (editable, pip mode)."""

import os
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

package_name = "r2s2r_sim"
here = Path(__file__).resolve().parent
data_files = [
    ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
    ("share/" + package_name, ["package.xml"]),
]
# The top-level launch/ and config/ folders of the repository are this package's share/ files, so
# `ros2 launch r2s2r_sim world.launch.py` finds them after `colcon build`.
repo = here.parent.parent
for folder in ("launch", "config", "config/emulated_hardware"):
    files = sorted(os.path.relpath(p, here) for p in glob(str(repo / folder / "*.*")))
    if files:
        data_files.append(("share/" + package_name + "/" + folder, files))

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={package_name: ["py.typed", "worlds/**/*"]},
    include_package_data=True,
    data_files=data_files,
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="r2s2r developers",
    maintainer_email="r2s2r@example.org",
    description="MuJoCo worlds served on the real drivers' ROS 2 topic interface; the r2s2r node graph and launcher.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "sim_node = r2s2r_sim.sim_node:main",
            "emulated_hardware_node = r2s2r_sim.emulated_hardware_node:main",
            "foxglove_node = r2s2r_sim.foxglove_node:main",
            "r2s2r = r2s2r_sim.cli:main",
        ],
    },
)
