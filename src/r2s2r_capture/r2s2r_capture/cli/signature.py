"""``r2s2r signature BAG [--out sig.yaml] [--against ref.yaml]``: learn (and check) an interface signature."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml
from r2s2r_sim.cli.common import bad_input

from r2s2r_capture.bags.signature import Tolerances, compare, signature_of_bag
from r2s2r_capture.errors import BagError


def cmd_signature(ns: argparse.Namespace) -> int:
    """Print or write the bag's signature; with ``--against``, list differences and return 1 if any.

    Bad input (a missing or unreadable bag or reference) returns 2, before anything is written.
    """
    try:
        sig = signature_of_bag(ns.bag, topics=ns.topics or None)
        reference = _reference(ns.against) if ns.against else None
    except BagError as err:
        return bad_input("signature", err)
    text = yaml.safe_dump(sig, sort_keys=False, default_flow_style=None, width=110)
    if ns.out:
        Path(ns.out).write_text(text, encoding="utf-8")
        print(f"r2s2r signature: wrote {ns.out} ({len(sig['topics'])} topics)")
    elif reference is None:
        print(text, end="")
    if reference is not None:
        diffs = compare(reference, sig, tolerances=Tolerances(rate_rel=ns.rate_tolerance))
        for diff in diffs:
            print(f"DIFF {diff}")
        for topic in sorted(reference.get("topics", {})):
            ref, new = reference["topics"][topic], sig["topics"].get(topic, {})
            if new and not ref.get("qos") and not new.get("qos"):
                print(f"NOTE {topic}: no QoS recorded in either bag: QoS not compared")
        print(f"r2s2r signature: {len(diffs)} difference(s) from {ns.against}")
        return 1 if diffs else 0
    return 0


def _reference(path: str) -> dict[str, Any]:
    """The reference signature of ``--against``.

    Raises:
        BagError: the file cannot be read or is not a signature mapping.
    """
    try:
        reference = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise BagError(f"--against {path}: cannot read the reference signature: {err}") from None
    if not isinstance(reference, dict):
        raise BagError(f"--against {path}: not a signature (expected a mapping with 'topics')")
    return reference


def register_signature(subparsers: Any) -> None:
    """Add ``r2s2r signature``."""
    p = subparsers.add_parser(
        "signature", help="learn a robot interface signature (topics, types, QoS, rates, frames) from a bag"
    )
    p.add_argument("bag", help="bag folder or .mcap/.db3 file")
    p.add_argument("-o", "--out", help="signature YAML to write (default: print it)")
    p.add_argument("--topics", nargs="*", default=[], help="only these topics")
    p.add_argument("--against", help="a reference signature YAML: print the differences, exit 1 if any")
    p.add_argument(
        "--rate-tolerance", type=float, default=0.25, help="relative rate tolerance (default 0.25)"
    )
    p.set_defaults(func=cmd_signature)
