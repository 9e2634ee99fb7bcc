"""What a real RGB-D sensor adds to an ideal render: stereo depth error and holes, colour noise, drift.

Used by the EMULATED HARDWARE (a stand-in for a RealSense D4xx) and by the sim's ``sensor`` variation axis
(``r2s2r_sim.variations.sensor``): MuJoCo renders perfect images, a real camera does not.  In the emulator
each effect is a section of the hardware profile and is off when its section is absent, so a profile
without these sections (the ``ideal`` one) gives exactly MuJoCo's images; in the sim the axis draws the
same parameters per variation (off by default).

Depth follows the active-stereo model of Intel's D400 tuning white paper (Grunnet-Jepsen, Sweetser,
Woodfill, "Best-Known-Methods for Tuning Intel RealSense D400 Depth Cameras", 2018): depth comes from
disparity ``d = f B / z``, and a disparity error of ``subpixel`` px RMS gives a depth error of
``z^2 subpixel / (f B)`` RMS.  We perturb the disparity, so the error grows with the square of range by
construction; then depth is quantised to the depth unit, and pixels the second imager (or the projector)
cannot see, pixels at depth discontinuities and pixels outside ``[min_range, max_range]`` read 0 (no data),
as the driver publishes them.  The second viewpoint is the render reprojected to a camera shifted by the
baseline along the optical x axis: a pixel is hidden from it when a nearer surface lands on or beyond it
(the ordering constraint of rectified stereo).

Colour follows the usual photon-transfer model (EMVA 1288): signal electrons ``S`` give shot noise
``sqrt(S)`` plus read noise; auto exposure and white balance settle at slightly different values every
episode (a log-normal gain per episode, one per channel for white balance); the lens darkens the corners
(relative illumination falling off with the square of the image radius).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from r2s2r_sim.ranges import field_interval, within

__all__ = [
    "ColorSensor",
    "DepthSensor",
    "FrameTiming",
    "SensorEffects",
    "SensorState",
    "read_sensor_sections",
]


@dataclass(frozen=True, kw_only=True)
class DepthSensor:
    """An active stereo depth sensor (D4xx).

    Attributes:
        subpixel_px: RMS disparity error (px); the D400 white paper gives ~0.08 for a well-textured scene.
        baseline_m: distance between the two imagers (m); D415 55 mm, D435 50 mm (D400 datasheet).
        depth_unit_m: the published depth's unit (m); the driver's default depth scale is 1 mm.
        min_range_m, max_range_m: depth outside this range reads 0 (D435: min-Z ~0.17 m at 640x480).
        temporal_fraction: share of the disparity error's variance that changes every frame; the rest is a
            fixed pattern for the episode (the speckle/texture-dependent part).
        edge_jump: relative depth jump ``|dz| / z`` between neighbours above which the farther pixel of the
            pair reads 0 (stereo matching fails across discontinuities).
        projector_offset_m: position of the IR projector along the optical x axis (m, from the depth
            origin), or ``None`` to ignore the projector's shadow.
    """

    subpixel_px: float = within(0.08, "[0, 5]")
    baseline_m: float = within(0.050, "(0, 1]")
    depth_unit_m: float = within(0.001, "(0, 0.1]")
    min_range_m: float = within(0.17, "[0, 100]")
    max_range_m: float = within(10.0, "(0, 100]")
    temporal_fraction: float = within(0.5, "[0, 1]")
    edge_jump: float = within(0.04, "(0, 10]")
    projector_offset_m: float | None = within(None, "[-1, 1]")

    def __post_init__(self) -> None:
        if not self.min_range_m < self.max_range_m:
            raise ValueError(
                f"min_range_m must be below max_range_m: got {self.min_range_m} and {self.max_range_m}"
            )

    def rms_error(self, z: np.ndarray | float, focal_px: float) -> np.ndarray | float:
        """The model's RMS depth error (m) at range ``z`` (m) for a focal length of ``focal_px``."""
        return np.asarray(z) ** 2 * self.subpixel_px / (focal_px * self.baseline_m)


@dataclass(frozen=True, kw_only=True)
class ColorSensor:
    """The colour imager: photon-transfer noise, per-episode exposure and white balance, vignetting.

    Attributes:
        full_well_e: electrons at a pixel value of 255 (small 1.4 um pixels hold a few thousand).
        read_noise_e: RMS read noise (electrons).
        exposure_drift: log-normal std of the auto-exposure gain, drawn per episode.
        white_balance_drift: log-normal std of each channel's white-balance gain, drawn per episode.
        vignetting: relative darkening at the image corner (0 = none, 0.3 = corners at 70 %).
        exposure_s: exposure time (s); what moves during it is blurred.
        motion_blur_samples: renders averaged over the exposure when something moved (0 or 1: no blur).
    """

    full_well_e: float = within(6000.0, "[1, 1e7]")
    read_noise_e: float = within(2.5, "[0, 1e4]")
    exposure_drift: float = within(0.08, "[0, 2]")
    white_balance_drift: float = within(0.03, "[0, 2]")
    vignetting: float = within(0.25, "[0, 0.95]")
    exposure_s: float = within(0.0, "[0, 0.5]")
    motion_blur_samples: int = within(0, "[0, 16]")

    @property
    def blurs(self) -> bool:
        """True when moving scenes are blurred over the exposure."""
        return self.exposure_s > 0 and self.motion_blur_samples > 1


@dataclass(frozen=True, kw_only=True)
class FrameTiming:
    """The driver's frame timing.

    Attributes:
        stamp_jitter_std_s: std of the header stamp around the exposure instant (s).
        drop_probability: chance that a frame is never published (USB/driver drops).
    """

    stamp_jitter_std_s: float = within(0.0, "[0, 1]")
    drop_probability: float = within(0.0, "[0, 0.99]")


class _Reader(Protocol):
    def fail(self, fld: str, msg: str) -> Exception: ...
    def mapping(self, value: Any, fld: str) -> Mapping[str, Any]: ...
    def only(self, data: Mapping[str, Any], allowed: set[str], fld: str) -> None: ...
    def number(
        self, value: Any, fld: str, low: float = -math.inf, high: float = math.inf, *, low_open: bool = False
    ) -> float: ...


SECTIONS = frozenset({"depth_sensor", "color_sensor", "frame_timing"})


def read_numbers(r: _Reader, value: Any, name: str, cls: type) -> dict[str, float]:
    """The numbers of a profile section, each checked against the range its field of ``cls`` declares.

    The section may hold only those fields; a declared range must be closed at its high end.
    """
    data = r.mapping(value, name)
    ranges = {f.name: field_interval(cls, f.name) for f in dataclasses.fields(cls)}
    ranges = {key: interval for key, interval in ranges.items() if interval is not None}
    r.only(data, set(ranges), name)
    return {
        key: r.number(data[key], f"{name}.{key}", iv.low, iv.high, low_open=iv.low_open)
        for key, iv in ranges.items()
        if key in data and data[key] is not None
    }


def read_sensor_sections(r: _Reader, top: Mapping[str, Any]) -> SensorEffects:
    """The sensor sections of a hardware profile (each optional; absent = that effect off).

    Raises:
        The reader's error, naming the field, for unknown keys and out-of-range values.
    """
    depth = color = timing = None
    if top.get("depth_sensor") is not None:
        values = read_numbers(r, top["depth_sensor"], "depth_sensor", DepthSensor)
        try:
            depth = DepthSensor(**values)
        except ValueError as err:
            raise r.fail("depth_sensor", str(err)) from None
    if top.get("color_sensor") is not None:
        values = read_numbers(r, top["color_sensor"], "color_sensor", ColorSensor)
        samples = values.pop("motion_blur_samples", 0.0)
        if samples != int(samples):
            raise r.fail("color_sensor.motion_blur_samples", f"must be a whole number, got {samples}")
        color = ColorSensor(**values, motion_blur_samples=int(samples))
    if top.get("frame_timing") is not None:
        timing = FrameTiming(**read_numbers(r, top["frame_timing"], "frame_timing", FrameTiming))
    return SensorEffects(depth=depth, color=color, timing=timing)


def stereo_hidden(depth_m: np.ndarray, focal_px: float, offset_m: float) -> np.ndarray:
    """Pixels that a viewpoint shifted by ``offset_m`` along the optical x axis cannot see.

    ``depth_m`` is z-depth (m, 0 = no data).  A point at column ``u`` appears at ``u - f b / z`` from the
    shifted viewpoint; it is hidden when a point on its far side (in the direction of the shift) lands on
    or beyond it, i.e. when the ordering of the reprojected columns is violated.
    """
    if offset_m == 0.0:
        return np.zeros(depth_m.shape, dtype=bool)
    valid = depth_m > 0
    z = np.where(valid, depth_m, np.inf)
    u = np.arange(depth_m.shape[1], dtype=np.float64)[None, :]
    target = u - focal_px * offset_m / z  # column in the shifted view (no data: stays in place)
    if offset_m < 0:  # mirror, so the occluders always lie to the right
        target = -target[:, ::-1]
    # nearest landing column of any pixel strictly to the right
    right_min = np.minimum.accumulate(target[:, ::-1], axis=1)[:, ::-1]
    blocker = np.concatenate([right_min[:, 1:], np.full((target.shape[0], 1), np.inf)], axis=1)
    hidden = blocker <= target - 0.5
    if offset_m < 0:
        hidden = hidden[:, ::-1]
    return hidden & valid


def edge_pixels(depth_m: np.ndarray, jump: float) -> np.ndarray:
    """The farther pixel of every 4-neighbour pair whose depths differ by more than ``jump`` relative."""
    out = np.zeros(depth_m.shape, dtype=bool)
    for axis in (0, 1):
        a = depth_m
        b = np.roll(depth_m, -1, axis=axis)
        near = np.minimum(a, b)
        jumped = (np.abs(a - b) > jump * np.where(near > 0, near, np.inf)) & (a > 0) & (b > 0)
        if axis == 0:
            jumped[-1, :] = False
        else:
            jumped[:, -1] = False
        far_first = jumped & (a > b)
        far_second = jumped & (b > a)
        out |= far_first
        out |= np.roll(far_second, 1, axis=axis)
    return out


@dataclass(frozen=True, kw_only=True)
class SensorEffects:
    """Every sensor effect of a profile; each ``None`` is off (the ideal sensor)."""

    depth: DepthSensor | None = None
    color: ColorSensor | None = None
    timing: FrameTiming | None = None

    @property
    def ideal(self) -> bool:
        """True when no effect is on: images pass through untouched."""
        return self.depth is None and self.color is None and self.timing is None


class SensorState:
    """Per-episode draws (exposure, white balance, the fixed depth pattern) and the per-frame generator.

    Everything is a function of ``(episode seed, frame index)``, so a rerun of an episode gives the same
    images whatever else ran before it.
    """

    def __init__(
        self, effects: SensorEffects, shape: tuple[int, int], focal_px: float, k: np.ndarray
    ) -> None:
        self.effects = effects
        self.shape = shape
        self.focal_px = focal_px
        h, w = shape
        u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        r2 = ((u - k[0, 2]) / k[0, 0]) ** 2 + ((v - k[1, 2]) / k[1, 1]) ** 2
        corner = max(
            ((x - k[0, 2]) / k[0, 0]) ** 2 + ((y - k[1, 2]) / k[1, 1]) ** 2
            for x in (0, w - 1)
            for y in (0, h - 1)
        )
        self._radius2 = r2 / corner  # 1 at the farthest corner
        self.seed: int | None = None
        self.frame = 0

    def start_episode(self, seed: int) -> None:
        """Draw the episode's exposure, white balance and fixed depth-error pattern."""
        self.seed = int(seed)
        self.frame = 0
        rng = np.random.default_rng([self.seed, 0x5E5])
        col = self.effects.color
        self.gain = np.ones(3)
        if col is not None:
            self.gain = math.exp(rng.normal(0.0, col.exposure_drift)) * np.exp(
                rng.normal(0.0, col.white_balance_drift, 3)
            )
        self.fixed = rng.standard_normal(self.shape)

    def next_frame(self) -> np.random.Generator:
        """The generator of the next frame's noise."""
        if self.seed is None:
            self.start_episode(0)
        self.frame += 1
        return np.random.default_rng([int(self.seed or 0), self.frame])

    def begin_frame(self, seed: int, index: int | None = None) -> np.random.Generator:
        """The generator of frame ``index`` (None: the next one) of episode ``seed``.

        A new seed starts that episode first.  A server that may drop frames passes the index (its frame
        count since the episode started), so a frame's noise does not depend on what was dropped before.
        """
        if self.seed is None or int(seed) != self.seed:
            self.start_episode(seed)
        if index is None:
            return self.next_frame()
        self.frame = int(index)
        return np.random.default_rng([int(self.seed or 0), self.frame])

    def apply(
        self, rgb: np.ndarray, depth_m: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Colour (uint8 HxWx3) and depth (float m, 0 = no data) of one frame as the sensor delivers them."""
        return self.color(rgb, rng), self.depth(depth_m, rng)

    def drop(self, rng: np.random.Generator) -> bool:
        """Whether this frame is lost by the driver."""
        t = self.effects.timing
        return t is not None and t.drop_probability > 0 and bool(rng.random() < t.drop_probability)

    def stamp_offset(self, rng: np.random.Generator) -> float:
        """Seconds to add to the frame's ideal stamp."""
        t = self.effects.timing
        return 0.0 if t is None or t.stamp_jitter_std_s == 0 else float(rng.normal(0.0, t.stamp_jitter_std_s))

    def color(self, rgb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The colour image (uint8 HxWx3) as the imager would deliver it."""
        col = self.effects.color
        if col is None:
            return rgb
        signal = rgb.astype(np.float64) * self.gain[None, None, :]
        signal *= (1.0 - col.vignetting * self._radius2)[..., None]
        electrons = np.clip(signal, 0.0, None) * (col.full_well_e / 255.0)
        noisy = electrons + rng.standard_normal(electrons.shape) * np.sqrt(electrons + col.read_noise_e**2)
        return np.clip(np.rint(noisy * (255.0 / col.full_well_e)), 0, 255).astype(np.uint8)

    def depth(self, depth_m: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The depth image (float m, 0 = no data) as the stereo matcher would deliver it."""
        d = self.effects.depth
        if d is None:
            return depth_m
        valid = depth_m > 0
        hidden = stereo_hidden(depth_m, self.focal_px, d.baseline_m)
        if d.projector_offset_m is not None:
            hidden |= stereo_hidden(depth_m, self.focal_px, d.projector_offset_m)
        hidden |= edge_pixels(depth_m, d.edge_jump)
        fb = self.focal_px * d.baseline_m
        disparity = np.where(valid, fb / np.where(valid, depth_m, 1.0), 0.0)
        a = d.temporal_fraction
        error = math.sqrt(1.0 - a) * self.fixed + math.sqrt(a) * rng.standard_normal(depth_m.shape)
        disparity = disparity + d.subpixel_px * error
        ok = valid & ~hidden & (disparity > 0)
        z = np.where(ok, fb / np.where(ok, disparity, 1.0), 0.0)
        z = np.rint(z / d.depth_unit_m) * d.depth_unit_m
        z[(z < d.min_range_m) | (z > d.max_range_m)] = 0.0
        return z
