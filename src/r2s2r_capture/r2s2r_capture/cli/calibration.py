"""``r2s2r board`` and ``r2s2r calibrate``: argparse front ends of the camera calibration core."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from r2s2r_sim.cli.common import bad_input, comma_vector

from r2s2r_capture.calibration import camera
from r2s2r_capture.calibration.charuco import DEFAULT_BOARD, write_board_pdf, write_board_png
from r2s2r_capture.errors import CalibrationError, refuse_existing

__all__ = ["register_board", "register_calibrate"]


def _add_board_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("ChArUco board (defaults: the r2s2r board)")
    g.add_argument(
        "--squares", type=comma_vector(2, kind=int), metavar="X,Y", default=None, help="squares across, down"
    )
    g.add_argument("--square-m", type=float, default=None, help="square side (m)")
    g.add_argument("--marker-m", type=float, default=None, help="marker side (m)")
    g.add_argument("--dictionary", default=None, help="OpenCV dictionary, e.g. DICT_5X5_100")


def _board(ns: argparse.Namespace) -> Any:
    changes: dict[str, Any] = {}
    if ns.squares is not None:
        changes["squares_x"], changes["squares_y"] = ns.squares
    for field in ("square_m", "marker_m", "dictionary"):
        if getattr(ns, field) is not None:
            changes[field] = getattr(ns, field)
    return dataclasses.replace(DEFAULT_BOARD, **changes)


def cmd_board(ns: argparse.Namespace) -> int:
    """Write the board PNG (and a PDF next to it with ``--pdf``)."""
    try:
        board = _board(ns)
        png = write_board_png(board, ns.out, px_per_square=ns.px_per_square, margin_px=ns.margin_px)
        print(f"wrote {png} ({board.squares_x}x{board.squares_y}, {board.dictionary})")
        if ns.pdf:
            print(f"wrote {write_board_pdf(board, Path(ns.out).with_suffix('.pdf'))} (print at 100 %)")
    except CalibrationError as err:
        return bad_input("board", err)
    return 0


def cmd_calibrate(ns: argparse.Namespace) -> int:
    """Calibrate intrinsics from a folder of board views and write CameraInfo YAML."""
    try:
        refuse_existing(ns.out, CalibrationError)  # fail before the slow part
        images = camera.load_images(ns.images_dir)
        result = camera.calibrate_intrinsics(
            images, _board(ns), min_views=ns.min_views, min_corners=ns.min_corners
        )
        out = camera.write_camera_info_yaml(result, ns.out, camera_name=ns.camera_name)
    except CalibrationError as err:
        return bad_input("calibrate", err)
    K = result.camera_matrix
    print(f"views used: {result.n_views}/{len(images)}, corners: {result.n_corners}")
    print(
        f"fx {K[0, 0]:.2f} fy {K[1, 1]:.2f} cx {K[0, 2]:.2f} cy {K[1, 2]:.2f} px; "
        f"D {result.distortion.round(5)}"
    )
    print(f"RMS reprojection error {result.rms_px:.4f} px (worst view {max(result.per_view_rms_px):.4f} px)")
    print(f"wrote {out}")
    return 0


def register_board(subparsers: Any) -> None:
    """Add ``r2s2r board``."""
    p = subparsers.add_parser(
        "board", help="write the ChArUco calibration board (PNG texture / printable PDF)"
    )
    p.add_argument("-o", "--out", required=True, help="PNG to write (never overwritten)")
    p.add_argument("--px-per-square", type=int, default=200, help="resolution (pixels per square)")
    p.add_argument("--margin-px", type=int, default=0, help="white margin (0 for a MuJoCo texture)")
    p.add_argument("--pdf", action="store_true", help="also write a true-scale PDF next to the PNG")
    _add_board_args(p)
    p.set_defaults(func=cmd_board)


def register_calibrate(subparsers: Any) -> None:
    """Add ``r2s2r calibrate``."""
    p = subparsers.add_parser("calibrate", help="camera intrinsics from ChArUco views -> CameraInfo YAML")
    p.add_argument("images_dir", help="folder of board views (png/jpg)")
    p.add_argument("-o", "--out", required=True, help="CameraInfo YAML to write (never overwritten)")
    p.add_argument("--camera-name", default="camera", help="camera_name field of the YAML")
    p.add_argument("--min-views", type=int, default=5, help="views with enough corners required")
    p.add_argument("--min-corners", type=int, default=8, help="corners a view needs to be used")
    _add_board_args(p)
    p.set_defaults(func=cmd_calibrate)
