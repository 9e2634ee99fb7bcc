"""``r2s2r capture``, ``r2s2r real2sim`` and ``r2s2r resim``: argparse front ends of the real-to-sim cores."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from r2s2r_sim.cli.common import bad_input, config_from_args
from r2s2r_sim.errors import WorldError
from r2s2r_sim.hardware.shipped_profiles import DEFAULT_PROFILE, PROFILES, profile_path
from r2s2r_sim.interface import InterfaceError

from r2s2r_capture.errors import (
    BagError,
    CalibrationError,
    CaptureError,
    IdentificationError,
    ReconstructionError,
    refuse_existing,
)
from r2s2r_capture.procedures.capture_config import CAPTURE_BOARD, add_extrinsics_argument, live_excitation
from r2s2r_capture.procedures.emulated_board import BOARD_BODY, board_world
from r2s2r_capture.procedures.session import CaptureConfig, capture_emulated
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim
from r2s2r_capture.real2sim.resim import resim
from r2s2r_capture.sysid.envelope import load_envelope

__all__ = ["register_capture", "register_real2sim", "register_resim"]

_ERRORS = (BagError, CalibrationError, CaptureError, IdentificationError, InterfaceError, ReconstructionError)
_INTERFACE_HELP = (
    "topic interface: a profile of config/interface.yaml or an interface file (default: its default)"
)


def cmd_capture(ns: argparse.Namespace) -> int:
    """Record the capture procedure into a bag: live over DDS, or from the emulated hardware in-process."""
    if ns.board_world:
        return _write_board_world(ns)
    if not ns.out:
        return bad_input("capture", "-o/--out BAG is required (or --board-world DIR)")
    try:
        cfg = config_from_args(
            CaptureConfig,
            ns,
            ("seed", "interface"),
            n_intrinsics_views=ns.board_views,
            n_scene_frames=ns.scene_frames,
            extrinsics=ns.extrinsics,
            **({"slide": None} if ns.no_slide else {}),
            **({} if ns.emulated else {"excitation": live_excitation(ns.excitation_s)}),
        )
        if not ns.emulated:
            return _capture_live(ns, cfg)
        profile = profile_path(ns.profile)
        summary = capture_emulated(
            ns.out, profile=profile, world=ns.world, config=cfg, progress=print, progress_bars=not ns.quiet
        )
    except _ERRORS as err:
        return bad_input("capture", err)
    counts = ", ".join(f"{k} {v}" for k, v in summary.counts.items())
    print(f"wrote {summary.bag} ({counts})")
    return 0


def _capture_live(ns: argparse.Namespace, cfg: CaptureConfig) -> int:
    """The capture over DDS against whatever serves the interface (a real cell, the stand-in, the sim)."""
    from r2s2r_capture.ros import live_capture  # imports rclpy: only when run, `r2s2r --help` needs no DDS

    envelope = load_envelope(ns.envelope) if ns.envelope else None
    options = live_capture.LiveOptions(yes=ns.yes, prompt=None if ns.yes else live_capture.main_prompt())
    try:
        summary = live_capture.capture_live(
            ns.out, world=ns.world, config=cfg, envelope=envelope, options=options
        )
    except KeyboardInterrupt:
        print(f"capture interrupted: the arm holds where it was; {ns.out} is closed", file=sys.stderr)
        return 130
    counts = ", ".join(f"{k} {v}" for k, v in summary.counts.items())
    print(f"wrote {summary.bag} ({counts})")
    return 0


def _write_board_world(ns: argparse.Namespace) -> int:
    """Write the capture variant of ``--world`` (the board as a mocap body) for the emulated hardware node."""
    try:
        root = refuse_existing(ns.board_world, CaptureError)
        root.mkdir(parents=True)
        folder = board_world(ns.world, CAPTURE_BOARD, root)
    except (CaptureError, WorldError, OSError) as err:
        return bad_input("capture", err)
    print(
        f"wrote {folder}; serve it with: ros2 run r2s2r_sim emulated_hardware_node --ros-args "
        f"-p world:={folder} -p capture_board:={BOARD_BODY}"
    )
    return 0


def cmd_real2sim(ns: argparse.Namespace) -> int:
    """Calibrate, reconstruct and identify a world from capture bag(s)."""
    try:
        refuse_existing(ns.out, ReconstructionError)
        same = ("camera", "interface", "max_iters", "world_id", "appearance")
        cfg = config_from_args(Real2SimConfig, ns, same, report=not ns.no_report)
        result = real2sim(
            ns.bags, ns.out, template=ns.template, config=cfg, progress=print, progress_bars=not ns.quiet
        )
    except _ERRORS as err:
        return bad_input("real2sim", err)
    print(result.summary())
    return 0


def cmd_resim(ns: argparse.Namespace) -> int:
    """Replay a bag's commands in a world and report the divergence."""
    try:
        result = resim(ns.bag, ns.world, delay_s=ns.delay, interface=ns.interface)
        print(result.summary())
        if ns.out:
            print(f"wrote {result.write_csv(ns.out)}")
    except _ERRORS as err:
        return bad_input("resim", err)
    return 0


def register_capture(subparsers: Any) -> None:
    """Add ``r2s2r capture``."""
    p = subparsers.add_parser(
        "capture", help="record the real2sim capture (board views, RGB-D scene, excitation) to a bag"
    )
    p.add_argument(
        "--emulated",
        action="store_true",
        help="capture from the emulated hardware in-process (default: live, over DDS against whatever "
        "serves the interface: a real cell, emulated_hardware_node or the sim node)",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="live: run unattended, no prompts (needs the emulated board stand-in: nobody moves the board)",
    )
    p.add_argument(
        "--envelope",
        default=None,
        help="live: YAML file whose 'envelope' section bounds the excitation (default: cautious defaults)",
    )
    p.add_argument(
        "--excitation-s", type=float, default=20.0, help="live: excitation duration (s), gentle sum of sines"
    )
    p.add_argument(
        "--board-world",
        default=None,
        metavar="DIR",
        help="write the capture variant of --world (the board as a mocap body) to DIR for "
        "emulated_hardware_node (capture_board:=...) and exit",
    )
    p.add_argument(
        "--profile",
        default=None,
        help=f"hardware profile of the emulated unit: a shipped one by name "
        f"({', '.join(PROFILES)}) or a YAML path (default: {DEFAULT_PROFILE})",
    )
    p.add_argument(
        "--world",
        default="tabletop-pick-v1",
        help="world id or folder: the emulated unit's (--emulated), else the live arm's template",
    )
    p.add_argument("-o", "--out", default=None, help="bag folder to create (must not exist)")
    p.add_argument("--board-views", type=int, default=12, help="hand-held board views for intrinsics")
    p.add_argument("--scene-frames", type=int, default=2, help="RGB-D frames of the scene")
    add_extrinsics_argument(p)
    p.add_argument("--seed", type=int, default=0, help="episode and excitation seed")
    p.add_argument(
        "--no-slide",
        action="store_true",
        help="leave out a push world's slide phase (the fingers flick the object at up to 1 m/s commanded; "
        "real2sim then keeps a prior on its friction)",
    )
    p.add_argument("--interface", default="", help=_INTERFACE_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_capture)


def register_real2sim(subparsers: Any) -> None:
    """Add ``r2s2r real2sim``."""
    p = subparsers.add_parser(
        "real2sim", help="capture bag(s) -> calibrated, reconstructed, identified world"
    )
    p.add_argument("bags", nargs="+", help="capture bag folder(s)")
    p.add_argument("-o", "--out", required=True, help="world folder to write (must not exist)")
    p.add_argument("--template", default="tabletop-pick-v1", help="world giving robot, camera names, task")
    p.add_argument("--camera", default="camera", help="ROS camera name")
    p.add_argument("--interface", default="", help=_INTERFACE_HELP)
    p.add_argument("--max-iters", type=int, default=30, help="identification optimiser iterations")
    p.add_argument("--no-report", action="store_true", help="skip the identification HTML report")
    p.add_argument("--world-id", default="real2sim-v1", help="id of the written world")
    p.add_argument(
        "--appearance",
        choices=("textured", "flat"),
        default="textured",
        help="textured: the scene frames on table, floor, backdrop and objects; flat: one mean colour each",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_real2sim)


def register_resim(subparsers: Any) -> None:
    """Add ``r2s2r resim``."""
    p = subparsers.add_parser("resim", help="replay a bag's arm commands in a world; report the divergence")
    p.add_argument("bag", help="bag with /joint_states and arm commands")
    p.add_argument("world", help="world folder or id")
    p.add_argument("--delay", type=float, default=None, help="command delay (s); default the world's")
    p.add_argument("--interface", default="", help=_INTERFACE_HELP)
    p.add_argument(
        "-o", "--out", default=None, help="CSV of the per-sample errors to write (never overwritten)"
    )
    p.set_defaults(func=cmd_resim)
