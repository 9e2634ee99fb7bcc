r"""``r2s2r profile new``: a hardware profile template for a world, at the world's own values.

Example:
    r2s2r world new --robot ~/robots/xarm7/xarm7.xml --out worlds/xarm7
    r2s2r profile new --world worlds/xarm7 --out worlds/xarm7/unit.yaml
    r2s2r launch world mode:=real world:=worlds/xarm7 hardware_profile:=worlds/xarm7/unit.yaml

The template lists every joint (damping, armature, friction loss), every servo (kp, kv; tendon-driven ones
included), every contact geom (friction; unnamed ones as ``body:<body>/<index>``), the camera, the scene's
objects and lights.  Edit the values your unit differs in; see docs/concepts/hardware-profiles.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from r2s2r_sim.cli.common import add_command_group, bad_input
from r2s2r_sim.errors import WorldError
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.hardware.profile_template import write_profile_template
from r2s2r_sim.worlds import world_path

__all__ = ["cmd_new", "register"]


def cmd_new(ns: argparse.Namespace) -> int:
    """Write the template; 0 on success, 2 on bad input (nothing written)."""
    out = Path(ns.out) if ns.out else None
    try:
        folder = world_path(ns.world)
        out = out or folder / "hardware_profile.yaml"
        path = write_profile_template(folder, out)
    except (WorldError, ValueError, FileExistsError) as err:
        return bad_input("profile new", f"error: {err}")
    try:
        load_hardware_profile(path)  # what was written must read back
    except HardwareProfileError as err:  # pragma: no cover - a bug in the writer, not bad input
        print(f"r2s2r profile new: error: the template does not load: {err}", file=sys.stderr)
        return 1
    print(f"r2s2r profile new: wrote {path}")
    print(f"  next: edit it, then run the emulated hardware with hardware_profile:={path}")
    return 0


def register(subparsers: Any) -> None:
    """Add the ``profile`` subcommand with ``new``."""
    sub = add_command_group(
        subparsers, "profile", "write hardware profiles of the emulated hardware", __doc__
    )
    new = sub.add_parser("new", help="write a profile template listing the world's joints, servos and geoms")
    new.add_argument("--world", required=True, help="world folder or bundled world id")
    new.add_argument(
        "--out", help="profile YAML to write (default: WORLD/hardware_profile.yaml; never overwritten)"
    )
    new.set_defaults(func=cmd_new)
