"""The one reader of r2s2r's YAML files: one size limit, and errors that name the file (and the field).

World files, interface profiles, hardware profiles and variation configs are read here; each module then
checks its own fields and raises its own error family (``WorldError``, ``InterfaceError``,
``HardwareProfileError``, ``VariationError``), which is passed in as ``error``. YAML given as text (a reset
service's variation config) goes through :func:`parse_yaml` with a name for the text in place of a path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_YAML_BYTES", "YamlDocument", "parse_yaml", "read_yaml"]

# Every YAML file r2s2r reads is small and hand-written; anything bigger is not one (and is not loaded).
MAX_YAML_BYTES = 1 << 20


@dataclass(frozen=True)
class YamlDocument:
    """A parsed YAML file: its data, and its bytes (hashed by callers that identify a file by content)."""

    source: Path
    data: Any
    raw: bytes


def parse_yaml(text: str | bytes, source: object, error: Callable[[str], Exception]) -> Any:
    """Parse YAML ``text`` read from ``source`` (a path, or a name for text given inline).

    Raises:
        ``error``: "<source>: ... more than the ... allowed" or "<source>: not valid YAML: ...".
    """
    raw = text.encode("utf-8") if isinstance(text, str) else text
    if len(raw) > MAX_YAML_BYTES:
        raise error(f"{source}: file is {len(raw)} bytes, more than the {MAX_YAML_BYTES} allowed")
    try:
        return yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise error(f"{source}: not valid YAML: {err}") from err


def read_yaml(path: str | Path, error: Callable[[str], Exception], *, kind: str = "file") -> YamlDocument:
    """Read and parse the YAML file ``path``.

    Args:
        path: the file.
        error: the caller's error family (built from the message).
        kind: what the file is, for "<path>: <kind> not found" (e.g. "interface file").

    Raises:
        ``error``: the file is missing, larger than :data:`MAX_YAML_BYTES`, not UTF-8 or not valid YAML;
        the message starts with the path.
    """
    source = Path(path)
    if not source.is_file():
        raise error(f"{source}: {kind} not found")
    size = source.stat().st_size
    if size > MAX_YAML_BYTES:
        raise error(f"{source}: file is {size} bytes, more than the {MAX_YAML_BYTES} allowed")
    raw = source.read_bytes()
    return YamlDocument(source, parse_yaml(raw, source, error), raw)
