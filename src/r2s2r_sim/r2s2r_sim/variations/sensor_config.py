"""Config of the sensor axis: ranges of the RGB-D sensor effects drawn for the sim's rendered frames.

The ranges are those the emulated hardware draws its unseen profiles from
(``r2s2r_sim.hardware.effect_sampling``, which takes them from here), i.e. the spread of public D4xx and
small-pixel colour imager figures; the bounds every value must respect are the hardware profile's own
(``r2s2r_sim.render.sensor_effects``), so a range the emulator would refuse is refused here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from r2s2r_sim.ranges import field_interval
from r2s2r_sim.render.sensor_effects import ColorSensor, DepthSensor
from r2s2r_sim.variations._checks import Range, check_range, fail

__all__ = ["COLOR_RANGES", "DEPTH_RANGES", "SensorVariationConfig"]

# The range fields of each effect, in the order the axis draws them.
DEPTH_RANGES = (
    "subpixel_px",
    "baseline_m",
    "min_range_m",
    "temporal_fraction",
    "edge_jump",
    "projector_offset_m",
)
COLOR_RANGES = ("full_well_e", "read_noise_e", "exposure_drift", "white_balance_drift", "vignetting")


@dataclass(frozen=True, kw_only=True)
class SensorVariationConfig:
    """Sensor effects on the rendered frames: D4xx stereo depth and a colour imager's noise and drift.

    MuJoCo renders ideal images; a real camera's are noisy, have holes and drift between episodes.  A real
    camera's noise is not identified by a capture, so every parameter is drawn from a documented range
    (see docs/concepts/variations.md for the sources).  Each range is ``[low, high]``, drawn uniformly.

    Attributes:
        enabled: whether this axis varies anything (off unless a config turns it on).
        depth: whether the depth effects apply (noise growing with the square of range, quantisation,
            holes at discontinuities and where the second imager or the projector cannot see).
        color: whether the colour effects apply (shot and read noise, per-episode auto exposure and white
            balance, vignetting).
        subpixel_px: RMS disparity error (px); the D400 tuning white paper gives ~0.08 for good texture.
        baseline_m: stereo baseline (m); D435 50 mm, D415 55 mm.
        min_range_m: closest depth the matcher reports (m); D435 min-Z ~0.17 m at 640x480.
        temporal_fraction: share of the disparity error's variance that changes every frame.
        edge_jump: relative depth jump above which the farther pixel of a neighbour pair reads 0.
        projector_offset_m: distance of the IR projector from the depth origin along the optical x axis
            (m, >= 0); its side is drawn too, either side equally likely.
        full_well_e: electrons at a pixel value of 255.
        read_noise_e: RMS read noise (electrons).
        exposure_drift: log-normal std of the per-episode auto-exposure gain.
        white_balance_drift: log-normal std of each channel's per-episode white-balance gain.
        vignetting: relative darkening at the image corner.
        depth_unit_m: the published depth's unit (m); the driver's default depth scale is 1 mm.
        max_range_m: farthest depth reported (m).
    """

    enabled: bool = False
    depth: bool = True
    color: bool = True
    subpixel_px: Range = (0.05, 0.12)
    baseline_m: Range = (0.050, 0.055)
    min_range_m: Range = (0.15, 0.3)
    temporal_fraction: Range = (0.3, 0.7)
    edge_jump: Range = (0.02, 0.06)
    projector_offset_m: Range = (0.015, 0.03)
    full_well_e: Range = (4000.0, 10000.0)
    read_noise_e: Range = (1.5, 4.0)
    exposure_drift: Range = (0.03, 0.12)
    white_balance_drift: Range = (0.01, 0.05)
    vignetting: Range = (0.1, 0.35)
    depth_unit_m: float = 0.001
    max_range_m: float = 10.0

    def __post_init__(self) -> None:
        for name in (*DEPTH_RANGES, *COLOR_RANGES):
            value = getattr(self, name)
            check_range(name, value)
            iv = field_interval(DepthSensor if name in DEPTH_RANGES else ColorSensor, name)
            assert iv is not None, f"{name}: the sensor field declares no range"
            lo = 0.0 if name == "projector_offset_m" else iv.low  # a distance; the side is drawn
            if value[0] < lo or (iv.low_open and value[0] == lo) or value[1] > iv.high:
                bracket = "(" if iv.low_open else "["
                raise fail(name, f"must lie in {bracket}{lo}, {iv.high}], got {list(value)}")
        for name in ("depth_unit_m", "max_range_m"):
            iv = field_interval(DepthSensor, name)
            assert iv is not None, f"{name}: the sensor field declares no range"
            value = getattr(self, name)
            if not (math.isfinite(value) and iv.low < value <= iv.high):
                raise fail(name, f"must lie in ({iv.low}, {iv.high}], got {value}")
        if self.min_range_m[1] >= self.max_range_m:
            raise fail(
                "min_range_m",
                f"must stay below max_range_m: got {list(self.min_range_m)} and {self.max_range_m}",
            )
        if self.enabled and not (self.depth or self.color):
            raise fail("depth", "the axis is enabled but neither depth nor color effects are on")

    def ranges(self) -> tuple[str, ...]:
        """The range fields this config draws (those of the effects that are on), in draw order."""
        return (DEPTH_RANGES if self.depth else ()) + (COLOR_RANGES if self.color else ())
