"""Convert a local LeRobot v2.1 dataset to v3.0 in place with lerobot's own converter.

``python -m r2s2r_eval.learning.lerobot_convert DIR`` runs
``lerobot.datasets.v30.convert_dataset_v21_to_v30.convert_dataset`` on ``DIR`` without the Hub: lerobot
keeps the v2.1 original beside it as ``DIR_old``.  It runs through this module rather than lerobot's own
command line so that lerobot imports next to the CPU build of torch
(:mod:`r2s2r_eval.learning.lerobot_import`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from r2s2r_eval.learning.lerobot_format import DatasetError, read_info
from r2s2r_eval.learning.lerobot_import import lerobot_converter

__all__ = ["convert_v21", "main"]


def convert_v21(root: str | Path) -> Path:
    """Convert the v2.1 dataset at ``root`` to v3.0 in place; the original is left at ``<root>_old``.

    Raises:
        DatasetError: ``root`` holds no v2.1 dataset.
    """
    root = Path(root).resolve()
    version = read_info(root).get("codebase_version")
    if version != "v2.1":
        raise DatasetError(f"{root}/meta/info.json: codebase_version {version!r}, this converts 'v2.1'")
    lerobot_converter().convert_dataset(repo_id=root.name, root=root.parent, push_to_hub=False)
    return root


def main(argv: list[str] | None = None) -> int:
    """Command line: 0 converted, 2 not a v2.1 dataset."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset", type=Path, help="folder of the LeRobot v2.1 dataset")
    ns = p.parse_args(argv)
    try:
        root = convert_v21(ns.dataset)
    except DatasetError as err:
        print(f"lerobot_convert: {err}", file=sys.stderr)
        return 2
    print(f"{root}: converted to LeRobot v3.0 (the v2.1 original is {root.name}_old beside it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
