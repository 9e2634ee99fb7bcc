"""``r2s2r sysid``: the argparse front end of the arm's dynamics identification."""

from __future__ import annotations

import argparse
from typing import Any

from r2s2r_sim.cli.common import bad_input

from r2s2r_capture.errors import IdentificationError, refuse_existing
from r2s2r_capture.sysid.identify import PARAM_KINDS, SysidConfig, identify
from r2s2r_capture.sysid.recording import JointRecording
from r2s2r_capture.sysid.report import write_identification

__all__ = ["register_sysid"]

SYSID_KINDS = PARAM_KINDS  # what `r2s2r sysid --kinds` offers


def cmd_sysid(ns: argparse.Namespace) -> int:
    """Identify arm dynamics from a recording and write the fitted MJCF, summary and report."""
    try:
        refuse_existing(ns.out, IdentificationError)
        rec = JointRecording.load_npz(ns.data)
        config = SysidConfig(
            joints=tuple(ns.joints) if ns.joints else None,
            kinds=tuple(ns.kinds),
            fit_delay=not ns.no_delay,
            validation_fraction=ns.validation_fraction,
            max_iters=ns.max_iters,
        )
        result = identify(ns.model, rec, config)
        paths = write_identification(result, ns.out, report=not ns.no_report)
    except IdentificationError as err:
        return bad_input("sysid", err)
    print(result.summary())
    print(f"optimisation {result.wall_s:.1f} s; wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def register_sysid(subparsers: Any) -> None:
    """Add ``r2s2r sysid``."""
    p = subparsers.add_parser("sysid", help="identify arm dynamics (mujoco.sysid) from recorded joint motion")
    p.add_argument("data", help=".npz with t, q_cmd, q, qd and joint_names")
    p.add_argument("--model", required=True, help="MJCF of the arm or world to identify")
    p.add_argument("-o", "--out", required=True, help="output folder (must not exist)")
    p.add_argument("--joints", nargs="+", default=None, help="joints to fit (default: all recorded)")
    p.add_argument(
        "--kinds", nargs="+", default=list(SYSID_KINDS), choices=SYSID_KINDS, help="parameters to fit"
    )
    p.add_argument("--no-delay", action="store_true", help="do not fit the command delay")
    p.add_argument("--validation-fraction", type=float, default=0.25, help="held-out trailing fraction")
    p.add_argument("--max-iters", type=int, default=30, help="optimiser iterations")
    p.add_argument("--no-report", action="store_true", help="skip the HTML report")
    p.set_defaults(func=cmd_sysid)
