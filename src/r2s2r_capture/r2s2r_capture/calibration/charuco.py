"""The ChArUco calibration board: one typed definition, its OpenCV objects, printable and texture images."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import cv2
import numpy as np

from r2s2r_capture.errors import CalibrationError, refuse_existing

__all__ = [
    "DEFAULT_BOARD",
    "CharucoBoardSpec",
    "board_pose_in_plane_geom",
    "write_board_pdf",
    "write_board_png",
]

# Dictionaries a board may use (the 5x5 and 6x6 families: enough ids for any board we print).
_DICTIONARIES: dict[str, int] = {
    name: int(getattr(cv2.aruco, name))
    for name in dir(cv2.aruco)
    if name.startswith("DICT_") and ("4X4" in name or "5X5" in name or "6X6" in name)
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharucoBoardSpec:
    """A ChArUco board: ``squares_x`` x ``squares_y`` chessboard squares with ArUco markers in the white ones.

    Board frame (OpenCV's): origin at the top-left corner of the printed board, x to the right, y down the
    page, z into the board; units are metres.  The inner chessboard corners are the calibration points.

    Attributes:
        squares_x: squares along the board width (>= 3).
        squares_y: squares along the board height (>= 3).
        square_m: chessboard square side (m).
        marker_m: ArUco marker side (m), smaller than ``square_m``.
        dictionary: OpenCV predefined dictionary name, e.g. ``"DICT_5X5_100"``.
    """

    squares_x: int = 7
    squares_y: int = 5
    square_m: float = 0.04
    marker_m: float = 0.03
    dictionary: str = "DICT_5X5_100"

    def __post_init__(self) -> None:
        """Validate sizes and the dictionary (errors name the field)."""
        if self.squares_x < 3 or self.squares_y < 3:
            raise CalibrationError(
                f"board squares_x and squares_y must be >= 3: got {self.squares_x} and {self.squares_y}"
            )
        if not (math.isfinite(self.square_m) and self.square_m > 0):
            raise CalibrationError(f"board square_m must be > 0 m: got {self.square_m}")
        if not (0 < self.marker_m < self.square_m):
            raise CalibrationError(
                f"board marker_m must be in (0, square_m): got marker_m={self.marker_m} and "
                f"square_m={self.square_m}"
            )
        if self.dictionary not in _DICTIONARIES:
            raise CalibrationError(
                f"board dictionary {self.dictionary!r} unknown; valid: {sorted(_DICTIONARIES)}"
            )
        needed = (self.squares_x * self.squares_y) // 2
        size = cv2.aruco.getPredefinedDictionary(_DICTIONARIES[self.dictionary]).bytesList.shape[0]
        if needed > size:
            raise CalibrationError(
                f"board needs {needed} markers but dictionary {self.dictionary} has only {size}"
            )

    @property
    def size_m(self) -> tuple[float, float]:
        """Board width and height (m), edge of the outer squares."""
        return self.squares_x * self.square_m, self.squares_y * self.square_m

    @property
    def n_corners(self) -> int:
        """Number of inner chessboard corners (the calibration points)."""
        return (self.squares_x - 1) * (self.squares_y - 1)

    def cv_board(self) -> cv2.aruco.CharucoBoard:
        """A fresh OpenCV ``CharucoBoard`` for this definition."""
        dictionary = cv2.aruco.getPredefinedDictionary(_DICTIONARIES[self.dictionary])
        return cv2.aruco.CharucoBoard(
            (self.squares_x, self.squares_y), self.square_m, self.marker_m, dictionary
        )

    def corners_m(self) -> np.ndarray:
        """Inner corners (n_corners, 3) in the board frame (m), indexed like the detector's corner ids."""
        return np.asarray(self.cv_board().getChessboardCorners(), dtype=np.float64).reshape(-1, 3)

    def board_image(self, px_per_square: int = 100, *, margin_px: int = 0) -> np.ndarray:
        """Grey uint8 image of the board, ``px_per_square`` pixels per square, plus a white margin.

        Raises:
            CalibrationError: ``px_per_square`` < 20 (markers would not be decodable).
        """
        if px_per_square < 20:
            raise CalibrationError(f"board px_per_square must be >= 20: got {px_per_square}")
        if margin_px < 0:
            raise CalibrationError(f"board margin_px must be >= 0: got {margin_px}")
        w = self.squares_x * px_per_square + 2 * margin_px
        h = self.squares_y * px_per_square + 2 * margin_px
        img = self.cv_board().generateImage((w, h), marginSize=margin_px, borderBits=1)
        return np.asarray(img, dtype=np.uint8)


DEFAULT_BOARD = CharucoBoardSpec()


def board_pose_in_plane_geom(board: CharucoBoardSpec) -> np.ndarray:
    """Pose (4, 4) of the OpenCV board frame in a MuJoCo ``plane`` geom textured with :func:`write_board_png`.

    The geom must have ``size="W/2 H/2 ..."`` (the board size) and a ``type="2d"`` texture with the default
    ``texrepeat="1 1"``: MuJoCo maps the image's top-left corner to the geom's (-W/2, +H/2) corner, so the
    board frame sits there with x along the geom's +x and y, z along the geom's -y, -z (checked by rendering).
    """
    width_m, height_m = board.size_m
    pose = np.eye(4)
    pose[:3, :3] = np.diag([1.0, -1.0, -1.0])
    pose[:3, 3] = (-width_m / 2.0, height_m / 2.0, 0.0)
    return pose


def write_board_png(
    board: CharucoBoardSpec, path: str | Path, *, px_per_square: int = 200, margin_px: int = 0
) -> Path:
    """Write the board as a PNG: a MuJoCo texture (``margin_px=0``: the image edge is the board edge).

    Raises:
        CalibrationError: ``path`` exists, or OpenCV cannot write it.
    """
    out = refuse_existing(path, CalibrationError)
    if not cv2.imwrite(str(out), board.board_image(px_per_square, margin_px=margin_px)):
        raise CalibrationError(f"cannot write board image {out}")
    return out


def write_board_pdf(board: CharucoBoardSpec, path: str | Path, *, margin_m: float = 0.01) -> Path:
    """Write a printable PDF at true scale (print at 100 %, no page fitting); needs matplotlib.

    Raises:
        CalibrationError: ``path`` exists, or matplotlib is not installed.
    """
    out = refuse_existing(path, CalibrationError)
    try:
        import matplotlib  # optional dependency

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt
    except ImportError as err:
        raise CalibrationError(f"writing {out} needs matplotlib (pip install matplotlib)") from err
    width_m, height_m = board.size_m
    inch = 0.0254
    fig_w, fig_h = (width_m + 2 * margin_m) / inch, (height_m + 2 * margin_m) / inch
    image = board.board_image(200)
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes(
        (
            margin_m / (width_m + 2 * margin_m),
            margin_m / (height_m + 2 * margin_m),
            width_m / (width_m + 2 * margin_m),
            height_m / (height_m + 2 * margin_m),
        )
    )
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    ax.set_axis_off()
    fig.text(
        0.01,
        0.002,
        f"ChArUco {board.squares_x}x{board.squares_y}, square {board.square_m * 1000:g} mm, "
        f"marker {board.marker_m * 1000:g} mm, {board.dictionary}; print at 100 %",
        fontsize=6,
    )
    fig.savefig(str(out), format="pdf")
    plt.close(fig)
    return out
