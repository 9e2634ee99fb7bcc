"""The error family of :mod:`r2s2r_capture`: every message names the bag, file, topic or field at fault."""

from __future__ import annotations

from pathlib import Path


class BagError(ValueError):
    """A bag (folder or data file) cannot be written or read as asked: the message names bag and field."""


class CaptureError(RuntimeError):
    """Recording or replaying failed at run time (writer thread died, queue overflow policy, ...)."""


class CalibrationError(ValueError):
    """Calibration input or output is unusable (too few views or corners, bad file): names what and why."""


class IdentificationError(ValueError):
    """Identification input is unusable (array shapes, unknown joints, static arm): names the field."""


class ReconstructionError(ValueError):
    """Reconstruction input or output is unusable (frame shapes, no table, bad world): names the field."""


def refuse_existing(path: str | Path, error: type[Exception]) -> Path:
    """``path`` as a ``Path``, or ``error`` if something is there already: outputs are never overwritten."""
    out = Path(path)
    if out.exists():
        raise error(f"output {out} already exists; refusing to overwrite it")
    return out
