"""The ``sensor`` section real2sim writes into a reconstructed world's ``variations.yaml``."""

from __future__ import annotations

import yaml
from r2s2r_capture.real2sim.world_variations import sensor_ranges
from r2s2r_sim.variations import parse_variation_text, sample_variation, sensor_effects
from r2s2r_sim.variations.config import SensorVariationConfig


def test_written_sensor_section_reads_back_as_the_documented_defaults_on() -> None:
    doc = {"sensor": sensor_ranges()}
    text = yaml.safe_dump(doc, sort_keys=False)
    assert "subpixel_px:\n  - 0.05\n  - 0.12" in text  # every range is written out, not left implicit
    cfg = parse_variation_text(text, "variations.yaml")
    assert cfg.sensor == SensorVariationConfig(enabled=True)
    assert cfg.enabled_axes()[-1] == "sensor"  # the axes left out keep their defaults
    effects = sensor_effects(sample_variation(cfg.only("sensor"), 0))
    assert effects is not None and effects.depth is not None and effects.color is not None
