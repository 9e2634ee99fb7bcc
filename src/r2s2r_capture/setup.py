"""ament_python package r2s2r_capture: installable with colcon (ROS distro) or pip (editable, pip mode)."""

from pathlib import Path

from setuptools import find_packages, setup

package_name = "r2s2r_capture"
here = Path(__file__).resolve().parent
data_files = [
    ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
    ("share/" + package_name, ["package.xml"]),
]

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={package_name: ["py.typed"]},
    include_package_data=True,
    data_files=data_files,
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="r2s2r developers",
    maintainer_email="r2s2r@example.org",
    description="Real-to-sim: record, calibrate, reconstruct and identify a MuJoCo world from rosbag2 captures.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "recorder_node = r2s2r_capture.recorder_node:main",
            "player_node = r2s2r_capture.player_node:main",
        ],
        "r2s2r.commands": [
            "record = r2s2r_capture.commands:register_record",
            "play = r2s2r_capture.commands:register_play",
            "board = r2s2r_capture.capture_cli:register_board",
            "calibrate = r2s2r_capture.capture_cli:register_calibrate",
            "sysid = r2s2r_capture.capture_cli:register_sysid",
            "reconstruct = r2s2r_capture.reconstruct_cli:register_reconstruct",
            "signature = r2s2r_capture.signature_cli:register_signature",
            "capture = r2s2r_capture.real2sim_cli:register_capture",
            "real2sim = r2s2r_capture.real2sim_cli:register_real2sim",
            "resim = r2s2r_capture.real2sim_cli:register_resim",
        ],
    },
)
