"""``r2s2r record`` and ``r2s2r play``: argparse front ends that run the nodes' ``main`` with ROS args."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from r2s2r_sim.cli.common import bad_input


def _ros_args(params: dict[str, Any], remaps: list[str] | None = None) -> list[str]:
    args = ["--ros-args"]
    for name, value in params.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, list):
            text = "[" + ",".join(f"'{v}'" for v in value) + "]"
        else:
            text = str(value)
        args += ["-p", f"{name}:={text}"]
    return args + [item for r in (remaps or []) for item in ("-r", r)]


def cmd_record(ns: argparse.Namespace) -> int:
    """Run recorder_node in-process until Ctrl-C/SIGTERM."""
    from r2s2r_capture.ros import recorder_node  # imports rclpy: only when run, `r2s2r --help` needs no DDS

    params: dict[str, Any] = {
        "output": ns.out,
        "storage": ns.storage,
        "all_topics": ns.all,
        "max_bag_size_bytes": ns.max_bag_size,
        "max_bag_duration_s": float(ns.max_bag_duration),
        "compression_mode": ns.compression_mode,
        "compression_format": ns.compression_format,
    }
    if ns.topics:
        params["topics"] = ns.topics
    if ns.cameras:
        params["interface_cameras"] = ns.cameras
        params["interface"] = ns.interface
        params["image_transport"] = ns.image_transport
    return recorder_node.main(["r2s2r-record", *_ros_args(params)])


def cmd_play(ns: argparse.Namespace) -> int:
    """Run player_node in-process; returns 0 at the end of the bag, 2 when there is no bag."""
    if not Path(ns.bag).exists():  # said before rclpy starts, like every other bad input
        return bad_input("play", f"bag {ns.bag}: no such file or folder")
    from r2s2r_capture.ros import player_node  # imports rclpy: only when run, `r2s2r --help` needs no DDS

    params: dict[str, Any] = {
        "bag": ns.bag,
        "rate": float(ns.rate),
        "start_offset_s": float(ns.start_offset),
        "loop": ns.loop,
        "clock_hz": float(ns.clock),
        "wait_for_subscribers": ns.wait_for_subscribers,
        "wait_timeout_s": float(ns.wait_timeout),
    }
    if ns.qos_profile_overrides_path:
        params["qos_overrides"] = ns.qos_profile_overrides_path
    if ns.topics:
        params["topics"] = ns.topics
    if ns.remap:
        params["remap"] = ns.remap
    return player_node.main(["r2s2r-play", *_ros_args(params)])


def register_record(subparsers: Any) -> None:
    """Add ``r2s2r record``."""
    p = subparsers.add_parser("record", help="record topics to a rosbag2 bag (pip-mode `ros2 bag record`)")
    p.add_argument("topics", nargs="*", help="absolute topic names")
    p.add_argument("-a", "--all", action="store_true", help="record every topic")
    p.add_argument(
        "--cameras",
        nargs="*",
        default=[],
        help="also record the interface's driver topics, commands and robot model of these cameras",
    )
    p.add_argument(
        "--interface",
        default="",
        help="interface profile or file of --cameras (default: config/interface.yaml's default)",
    )
    p.add_argument(
        "--image-transport",
        default="raw",
        choices=["raw", "compressed"],
        help="--cameras' images as published raw, or their /compressed and /compressedDepth topics",
    )
    p.add_argument("-o", "--out", required=True, help="bag folder to create (must not exist)")
    p.add_argument("-s", "--storage", default="mcap", choices=["mcap", "sqlite3"])
    p.add_argument("-b", "--max-bag-size", type=int, default=0, help="split size in bytes (0: never)")
    p.add_argument("-d", "--max-bag-duration", type=float, default=0.0, help="split duration in s (0: never)")
    p.add_argument(
        "--compression-mode",
        default="none",
        choices=["none", "file", "message"],
        help="compress each closed file or each message (as ros2 bag record)",
    )
    p.add_argument("--compression-format", default="zstd", choices=["zstd"], help="compressor")
    p.set_defaults(func=cmd_record)


def register_play(subparsers: Any) -> None:
    """Add ``r2s2r play``."""
    p = subparsers.add_parser(
        "play", help="replay a rosbag2 bag with its recorded QoS (pip-mode `ros2 bag play`)"
    )
    p.add_argument("bag", help="bag folder or .mcap/.db3 file")
    p.add_argument("-r", "--rate", type=float, default=1.0)
    p.add_argument("--start-offset", type=float, default=0.0, help="seconds to skip from the start")
    p.add_argument("--topics", nargs="*", default=[], help="only these topics")
    p.add_argument("--remap", nargs="*", default=[], help="/from:=/to")
    p.add_argument("-l", "--loop", action="store_true")
    p.add_argument(
        "--clock",
        type=float,
        nargs="?",
        const=40.0,
        default=0.0,
        metavar="HZ",
        help="publish /clock from bag time at HZ (default 40 when given; not published without --clock)",
    )
    p.add_argument(
        "--qos-profile-overrides-path",
        help="YAML {topic: {reliability, durability, history, depth}} replacing the recorded QoS",
    )
    p.add_argument(
        "--wait-for-subscribers",
        type=int,
        default=0,
        metavar="N",
        help="before the first message, wait until N subscriptions in all have matched (exit 1 on timeout)",
    )
    p.add_argument(
        "--wait-timeout", type=float, default=10.0, help="longest wait for subscribers, s (default 10)"
    )
    p.set_defaults(func=cmd_play)
