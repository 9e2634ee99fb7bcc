"""The shipped hardware profiles of the emulated hardware, by name, and the default one.

``realistic`` (the default) adds a D435's depth and colour sensor effects, frame timing, an arm that is not
a rigid chain and other contact settings to the bench unit's numbers; ``ideal`` is the same unit with ideal
sensors and a rigid arm (see docs/concepts/hardware-profiles.md); ``bullet`` is the unit simulated and
rendered by PyBullet (``engine: pybullet``, ``r2s2r_sim.hardware.bullet_unit``). Everything that takes a
profile (the emulated hardware node, ``r2s2r capture``, the closed-loop and transfer studies) resolves it
here, so the default is chosen once.
"""

from __future__ import annotations

from pathlib import Path

from r2s2r_sim.paths import config_dir

__all__ = ["DEFAULT_PROFILE", "PROFILES", "profile_path"]

PROFILES = {
    "ideal": "emulated_hardware/ideal_profile.yaml",
    "realistic": "emulated_hardware/realistic_profile.yaml",
    "bullet": "emulated_hardware/bullet_profile.yaml",
}
DEFAULT_PROFILE = "realistic"


def profile_path(profile: str | Path | None = None) -> Path:
    """A shipped profile (``ideal``, ``realistic``, ``bullet``), a YAML path; None or empty: the default."""
    text = str(profile) if profile is not None else ""
    if not text:
        text = DEFAULT_PROFILE
    if text in PROFILES:
        return config_dir() / PROFILES[text]
    return Path(text)
