"""``r2s2r capture``, ``r2s2r real2sim`` and ``r2s2r resim``: argparse front ends of the real-to-sim cores."""

from __future__ import annotations

import argparse
from typing import Any

from r2s2r_sim.cli.common import bad_input, config_from_args
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
from r2s2r_capture.procedures.session import CaptureConfig, capture_emulated
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim
from r2s2r_capture.real2sim.resim import resim

__all__ = ["register_capture", "register_real2sim", "register_resim"]

_ERRORS = (BagError, CalibrationError, CaptureError, IdentificationError, InterfaceError, ReconstructionError)
_INTERFACE_HELP = (
    "topic interface: a profile of config/interface.yaml or an interface file (default: its default)"
)


def cmd_capture(ns: argparse.Namespace) -> int:
    """Record the capture procedure from the emulated hardware (in-process) into a bag."""
    if not ns.emulated:
        return bad_input(
            "capture",
            "only --emulated is implemented; on a real cell record the phases with "
            "`r2s2r record` (see r2s2r_capture.procedures.session for what to record)",
        )
    try:
        cfg = config_from_args(
            CaptureConfig,
            ns,
            ("seed", "interface"),
            n_intrinsics_views=ns.board_views,
            n_scene_frames=ns.scene_frames,
            **({"slide": None} if ns.no_slide else {}),
        )
        profile = profile_path(ns.profile)
        summary = capture_emulated(
            ns.out, profile=profile, world=ns.world, config=cfg, progress=print, progress_bars=not ns.quiet
        )
    except _ERRORS as err:
        return bad_input("capture", err)
    counts = ", ".join(f"{k} {v}" for k, v in summary.counts.items())
    print(f"wrote {summary.bag} ({counts})")
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
        result = resim(ns.bag, ns.world, delay_s=ns.delay)
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
    p.add_argument("--emulated", action="store_true", help="capture from the emulated hardware (in-process)")
    p.add_argument(
        "--profile",
        default=None,
        help=f"hardware profile of the emulated unit: a shipped one by name "
        f"({', '.join(PROFILES)}) or a YAML path (default: {DEFAULT_PROFILE})",
    )
    p.add_argument("--world", default="tabletop-pick-v1", help="world id or folder the profile is for")
    p.add_argument("-o", "--out", required=True, help="bag folder to create (must not exist)")
    p.add_argument("--board-views", type=int, default=12, help="hand-held board views for intrinsics")
    p.add_argument("--scene-frames", type=int, default=2, help="RGB-D frames of the scene")
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
    p.add_argument(
        "-o", "--out", default=None, help="CSV of the per-sample errors to write (never overwritten)"
    )
    p.set_defaults(func=cmd_resim)
