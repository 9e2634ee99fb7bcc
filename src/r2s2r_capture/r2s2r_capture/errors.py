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


class EnvelopeViolation(IdentificationError):
    """An arm trajectory leaves its safety envelope: refused before anything moves.

    The message names the rule (the envelope's field), what broke it (a joint, the tool point's axis or a
    pair of geoms), the time into the trajectory, the value and the bound; the same are attributes, so a
    caller can show them without parsing the text.
    """

    def __init__(self, message: str, *, rule: str, subject: str, time_s: float, value: float, bound: float):
        """Keep the violation's parts beside the message."""
        super().__init__(message)
        self.rule = rule
        self.subject = subject
        self.time_s = time_s
        self.value = value
        self.bound = bound


class ReconstructionError(ValueError):
    """Reconstruction input or output is unusable (frame shapes, no table, bad world): names the field."""


def refuse_existing(path: str | Path, error: type[Exception]) -> Path:
    """``path`` as a ``Path``, or ``error`` if something is there already: outputs are never overwritten."""
    out = Path(path)
    if out.exists():
        raise error(f"output {out} already exists; refusing to overwrite it")
    return out
