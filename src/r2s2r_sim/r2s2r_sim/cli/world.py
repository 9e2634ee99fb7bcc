r"""``r2s2r world new`` and ``r2s2r world check``: bring your own arm.

Example:
    r2s2r world new --robot ~/robots/xarm7/xarm7.xml --out worlds/xarm7
    r2s2r world check worlds/xarm7 --picture worlds/xarm7/tool_frame.png

``new`` writes a world folder for the bundled table task around the robot file (MJCF, URDF or xacro, by
path or ``package://``); the robot file stays where it is.  What it guessed is printed; flags confirm or
override it.  ``check`` prints what a world resolves to and every problem found; exit status 2 on errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from r2s2r_sim.authoring.world_check import check_world
from r2s2r_sim.authoring.world_new import NewWorldOptions, write_world
from r2s2r_sim.cli.common import EXIT_BAD_INPUT, add_command_group, bad_input, comma_vector
from r2s2r_sim.errors import WorldError
from r2s2r_sim.world.robot_source import resolve_package, split_package_uri

__all__ = ["cmd_check", "cmd_new", "register", "robot_reference"]


def _names(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(n.strip() for n in text.split(",") if n.strip())


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition(":=") if ":=" in item else item.partition("=")
        if not sep or not key:
            raise WorldError(f"{flag}: expected NAME=VALUE, got {item!r}")
        out[key] = value
    return out


def robot_reference(robot: str) -> tuple[str, Path]:
    """The robot as world.yaml names it (``package://`` kept, a path made absolute), and on disk."""
    if robot.startswith("package://"):
        uri = split_package_uri(robot)
        folder = None if uri is None else resolve_package(uri[0], {})
        if uri is None or folder is None:
            raise WorldError(f"--robot: {robot!r}: package not found in the ament index")
        return robot, folder / uri[1]
    path = Path(robot).resolve()
    if not path.is_file():
        raise WorldError(f"--robot: file {robot!r} not found")
    return str(path), path  # absolute: the world folder may move


def cmd_new(ns: argparse.Namespace) -> int:
    """Write the world folder; 0 on success, 2 on bad input (nothing written)."""
    try:
        packages = {k: Path(v).resolve() for k, v in _pairs(ns.package, "--package").items()}
        ref, path = robot_reference(ns.robot)
        opts = NewWorldOptions(
            robot=ref,
            robot_file=path,
            world_id=ns.id,
            arm_joints=_names(ns.arm_joints),
            gripper_joints=_names(ns.gripper_joints),
            gripper_actuators=_names(ns.gripper_actuator),
            no_gripper=ns.no_gripper,
            gripper_open=ns.gripper_open,
            gripper_closed=ns.gripper_closed,
            ee_site=ns.ee_site,
            tool_body=ns.tool_body,
            tool_pos=ns.tool_pos,
            tool_z=ns.tool_z,
            tool_y=ns.tool_y,
            home=ns.home,
            xacro_args=_pairs(ns.xacro_arg, "--xacro-arg"),
            packages=packages,
        )
        world_yaml, guess = write_world(Path(ns.out), opts)
    except WorldError as err:
        return bad_input("world new", f"error: {err}")
    robot = guess.robot
    print(f"r2s2r world new: wrote {world_yaml}")
    print(f"  arm joints: {', '.join(robot['arm_joints'])}")
    gripper = robot.get("gripper")
    print(f"  gripper: {'none' if gripper is None else gripper}")
    print(f"  tool frame: {robot.get('ee_site') or robot.get('tool_frame')}")
    for note in guess.notes:
        print(f"  note: {note}")
    # What would stop the reference policy on this world (a grip that cannot hold, a target out of reach):
    # said now, not after a sweep of failed episodes.
    report = check_world(Path(ns.out), None)
    for problem in [f"error: {e}" for e in report.errors] + [f"warning: {w}" for w in report.warnings]:
        print(f"  {problem}")
    print(f"  next: r2s2r world check {ns.out}")
    return 0


def cmd_check(ns: argparse.Namespace) -> int:
    """Print the world's report; 0 without errors, 2 with."""
    picture = (
        Path(ns.picture) if ns.picture else (None if ns.no_picture else Path(ns.world) / "tool_frame.png")
    )
    report = check_world(Path(ns.world), picture)
    print(report.text())
    return EXIT_BAD_INPUT if report.errors else 0


def _add_new(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--robot", required=True, help="robot file: MJCF, URDF or xacro; a path or package://PKG/PATH"
    )
    parser.add_argument("--out", default="my_world", help="world folder to write (must not hold a world)")
    parser.add_argument("--id", help="world id (default: the robot file's name, e.g. xarm7-pick-v1)")
    parser.add_argument(
        "--arm-joints", help="arm joints in command order, comma-separated (default: guessed)"
    )
    parser.add_argument("--gripper-joints", help="joints reported as the gripper, comma-separated")
    parser.add_argument(
        "--gripper-actuator",
        help="the actuator the gripper command drives: its name, #index in the robot file (for an unnamed "
        "one) or the joint or tendon it drives; comma-separated when each finger has its own",
    )
    parser.add_argument("--no-gripper", action="store_true", help="the robot has no gripper")
    parser.add_argument("--gripper-open", type=float, help="gripper command of fully open (joint units)")
    parser.add_argument("--gripper-closed", type=float, help="gripper command of fully closed (joint units)")
    parser.add_argument("--ee-site", help="a site of the robot file to use as tool frame")
    parser.add_argument("--tool-body", help="declare the tool frame on this body instead")
    xyz = comma_vector(3)
    parser.add_argument(
        "--tool-pos", type=xyz, metavar="X,Y,Z", help="tool frame origin in that body's frame (m)"
    )
    parser.add_argument(
        "--tool-z", type=xyz, metavar="X,Y,Z", help="approach axis (out through the fingertips), body frame"
    )
    parser.add_argument(
        "--tool-y", type=xyz, metavar="X,Y,Z", help="finger axis (fingers close along it), body frame"
    )
    parser.add_argument(
        "--home",
        type=comma_vector(),
        metavar="Q1,Q2,...",
        help="home arm joint positions when the file has no keyframe",
    )
    parser.add_argument(
        "--xacro-arg", action="append", default=[], metavar="NAME:=VALUE", help="xacro argument"
    )
    parser.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="folder of a package named by package:// (default: the ament index)",
    )
    parser.set_defaults(func=cmd_new)


def _add_check(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("world", help="world folder")
    parser.add_argument("--picture", help="PNG of the tool frame's axes (default: WORLD/tool_frame.png)")
    parser.add_argument("--no-picture", action="store_true", help="do not render the picture")
    parser.set_defaults(func=cmd_check)


def register(subparsers: Any) -> None:
    """Add the ``world`` subcommand with ``new`` and ``check``."""
    sub = add_command_group(subparsers, "world", "make and check world folders for your own arm", __doc__)
    _add_new(sub.add_parser("new", help="write a world folder for the table task around a robot file"))
    _add_check(
        sub.add_parser("check", help="print what a world resolves to and every problem; exit 2 on errors")
    )
