"""The JSON report every ``make bench`` benchmark writes: its ``--out`` option and the writer."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["add_out_option", "add_world_options", "write_results"]


def add_out_option(parser: argparse.ArgumentParser) -> None:
    """Add the required ``--out`` (the JSON file to write)."""
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write (its folder is created)")


def add_world_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--world`` (the bundled pick world by default) and ``--variations`` (None: the bundled axes)."""
    parser.add_argument("--world", default="tabletop-pick-v1", help="bundled world id or world folder")
    parser.add_argument(
        "--variations", type=Path, default=None, help="variation axes YAML (default: config/variations.yaml)"
    )


def write_results(results: Mapping[str, Any], out: Path) -> None:
    """Write ``results`` as indented JSON to ``out`` (creating its folder, replacing the file) and say so."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"wrote {out}")
