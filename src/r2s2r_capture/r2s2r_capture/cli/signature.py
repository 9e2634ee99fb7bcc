"""``r2s2r signature BAG [-o sig.yaml] [--against ref.yaml]``: learn (and check) an interface signature."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from r2s2r_capture.bags.signature import Tolerances, compare, signature_of_bag
from r2s2r_capture.errors import BagError


def cmd_signature(ns: argparse.Namespace) -> int:
    """Print or write the bag's signature; with ``--against``, list differences and return 1 if any."""
    try:
        sig = signature_of_bag(ns.bag, topics=ns.topics or None)
    except BagError as err:
        print(f"r2s2r signature: {err}", file=sys.stderr)
        return 1
    text = yaml.safe_dump(sig, sort_keys=False, default_flow_style=None, width=110)
    if ns.output:
        Path(ns.output).write_text(text, encoding="utf-8")
        print(f"r2s2r signature: wrote {ns.output} ({len(sig['topics'])} topics)")
    elif not ns.against:
        print(text, end="")
    if ns.against:
        reference = yaml.safe_load(Path(ns.against).read_text(encoding="utf-8"))
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


def register_signature(subparsers: Any) -> None:
    """Add ``r2s2r signature``."""
    p = subparsers.add_parser(
        "signature", help="learn a robot interface signature (topics, types, QoS, rates, frames) from a bag"
    )
    p.add_argument("bag", help="bag folder or .mcap/.db3 file")
    p.add_argument("-o", "--output", help="write the signature YAML here (default: print it)")
    p.add_argument("--topics", nargs="*", default=[], help="only these topics")
    p.add_argument("--against", help="a reference signature YAML: print the differences, exit 1 if any")
    p.add_argument(
        "--rate-tolerance", type=float, default=0.25, help="relative rate tolerance (default 0.25)"
    )
    p.set_defaults(func=cmd_signature)
