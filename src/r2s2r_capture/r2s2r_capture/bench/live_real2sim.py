r"""real2sim from a live capture over DDS against real2sim from the in-process capture, on one profile.

    python -m r2s2r_capture.bench.live_real2sim [--profile realistic | --random-profile SEED]
        [--interface PROFILE] [--out out/bench_live_real2sim.json]

Both captures run the same phases (:mod:`r2s2r_capture.procedures.phases`) with the same settings and
the same gentle excitation (:func:`~r2s2r_capture.procedures.capture_config.live_excitation`): one
in-process on the emulator's clock (:func:`~r2s2r_capture.procedures.session.capture_emulated`), one live
(:func:`~r2s2r_capture.ros.live_capture.capture_live`) against ``emulated_hardware_node`` started here in
its own process and DDS domain, on the board variant of the world, with its board stand-in.  Each bag goes
through real2sim and is scored as :mod:`r2s2r_capture.bench.real2sim` scores it: camera position (mm) and
rotation (deg), object positions (mm), and the held-out joint tracking RMSE of the template world over that
of the identified world (one held-out in-process excitation, replayed with resim in both).

On an interface whose arm runs a trajectory controller (``--interface ur_robot_driver``), the live bag
also goes through identification against the set-points sent instead of the controller's reference
(``live_sent_commands``): the tracking figure of each source of commands, on the same capture.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.ros.dds import claim_domain

from r2s2r_capture.bench.random_profile import random_profile
from r2s2r_capture.bench.real2sim import DEFAULT_WORLD, compare
from r2s2r_capture.procedures.capture_config import (
    CAPTURE_BOARD,
    CaptureConfig,
    add_extrinsics_argument,
    live_excitation,
)
from r2s2r_capture.procedures.emulated_board import BOARD_BODY, board_world
from r2s2r_capture.procedures.session import capture_emulated, scene_truth
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim
from r2s2r_capture.real2sim.resim import resim
from r2s2r_capture.sysid.envelope import SafetyEnvelope
from r2s2r_capture.sysid.joint_motion import reference_topic

__all__ = ["main", "run"]

_STOP_S = 20.0  # for the node to end after SIGINT


def _scores(result: Any, profile: Any, truth: dict[str, Any], held: Path) -> dict[str, Any]:
    """The bench's errors of one real2sim result, with the held-out tracking ratio."""
    report = compare(result, profile, truth)
    before = resim(held, DEFAULT_WORLD).stats()["joint_rmse"]
    after = resim(held, result.world_dir).stats()["joint_rmse"]
    return {
        "camera_position_mm": report["camera_position_mm"],
        "camera_rotation_deg": report["camera_rotation_deg"],
        "object_position_mm": {k: v["position_mm"] for k, v in report["objects"].items()},
        "tracking_rmse_before_rad": before,
        "tracking_rmse_after_rad": after,
        "tracking_rmse_ratio": before / max(after, 1e-12),
    }


def run(
    profile_name: str,
    work: Path,
    *,
    max_iters: int,
    board_views: int,
    excitation_s: float,
    extrinsics: str = "hand_eye",
    interface: str = "",
) -> dict:
    """Both captures, real2sim on each, and their scores (``{"in_process": ..., "live": ...}``)."""
    path = profile_path(profile_name)
    profile = load_hardware_profile(path)
    cfg = CaptureConfig(
        n_intrinsics_views=board_views,
        n_scene_frames=1,
        excitation=live_excitation(excitation_s),
        slide=None,
        extrinsics=extrinsics,
        interface=interface,
    )
    r2s = Real2SimConfig(max_iters=max_iters, report=False, interface=interface)
    held = capture_emulated(
        work / "heldout",
        profile=path,
        config=CaptureConfig(
            n_intrinsics_views=0, known_board_poses=(), n_scene_frames=0, excitation=cfg.excitation, seed=1
        ),
    ).bag
    out: dict[str, Any] = {"profile": profile_name, "extrinsics": extrinsics, "interface": interface}
    cap = capture_emulated(work / "in_process", profile=path, config=cfg, progress=print)
    result = real2sim([cap.bag], work / "world_in_process", config=r2s)
    out["in_process"] = _scores(result, profile, cap.truth, held)

    world = board_world(DEFAULT_WORLD, CAPTURE_BOARD, work)
    lock = claim_domain()
    os.environ["ROS_DOMAIN_ID"] = str(lock.domain)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    node = subprocess.Popen(  # list arguments, no shell
        [
            "emulated_hardware_node",
            "--ros-args",
            "-p",
            f"world:={world}",
            "-p",
            f"profile:={path}",
            "-p",
            f"capture_board:={BOARD_BODY}",
            *(["-p", f"interface:={interface}"] if interface else []),
        ],  # fmt: skip
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Two Python processes share the machine's cores, and the realistic profile's joint states are noisy:
        # the default bounds (50 ms staleness, 0.2 rad tracking, 1 rad/s measured) are for a driver on its
        # own cores.  The stand-in stalls for a second or more there and then skips ahead, its servos bursting
        # to 2-3 rad/s to catch up; the plan itself stays under 0.6 rad/s.
        envelope = SafetyEnvelope(state_timeout_s=5.0, tracking_error_rad=0.5, velocity_cap_rad_s=3.0)
        # The live half runs its ROS node in this process; the bench module itself imports without ROS.
        from r2s2r_capture.ros.live_capture import capture_live

        live = capture_live(work / "live", config=cfg, envelope=envelope)
    finally:
        node.send_signal(signal.SIGINT)
        try:
            node.wait(timeout=_STOP_S)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()
        lock.release()
    result = real2sim([live.bag], work / "world_live", config=r2s)
    truth = scene_truth(EmulatedArm(world, profile, seed=cfg.seed))
    out["live"] = _scores(result, profile, truth, held)
    if reference_topic(interface) is not None:
        sent = dataclasses.replace(r2s, controller_reference=False)
        result = real2sim([live.bag], work / "world_live_sent", config=sent)
        out["live_sent_commands"] = _scores(result, profile, truth, held)
    return out


def format_report(r: dict[str, Any]) -> str:
    """The two columns side by side."""
    rows = [
        ("camera position (mm)", "camera_position_mm"),
        ("camera rotation (deg)", "camera_rotation_deg"),
        ("tracking RMSE before/after (x)", "tracking_rmse_ratio"),
    ]
    head = f"profile {r['profile']}, {r['extrinsics']}:"
    lines = [f"{head:38}{'in-process':>12}{'live':>12}"]
    for label, key in rows:
        lines.append(f"{label:38}{r['in_process'][key]:12.3f}{r['live'][key]:12.3f}")
    if "live_sent_commands" in r:
        ratio = r["live_sent_commands"]["tracking_rmse_ratio"]
        lines.append(f"{'  live, against the set-points sent':38}{'':12}{ratio:12.3f}")
    for body in r["in_process"]["object_position_mm"]:
        a = r["in_process"]["object_position_mm"][body]
        b = r["live"]["object_position_mm"].get(body, float("nan"))
        lines.append(f"{body + ' position (mm)':38}{a:12.2f}{b:12.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run both, print the table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--profile", default="realistic", help="shipped hardware profile name or YAML path")
    g.add_argument(
        "--random-profile",
        type=int,
        default=None,
        metavar="SEED",
        help="a random realistic profile (every sensor, arm and contact effect), written beside --out",
    )
    p.add_argument("--out", default="out/bench_live_real2sim.json", help="JSON report to write")
    p.add_argument("--max-iters", type=int, default=10, help="identification optimiser iterations")
    p.add_argument("--board-views", type=int, default=8, help="hand-held board views for intrinsics")
    p.add_argument("--excitation-s", type=float, default=10.0, help="excitation duration (s)")
    add_extrinsics_argument(p)
    p.add_argument(
        "--interface",
        default="",
        help="interface profile the stand-in serves and the capture uses (e.g. ur_robot_driver: trajectory "
        "controller); default: the forward controllers",
    )
    ns = p.parse_args(argv)
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    profile = ns.profile
    if ns.random_profile is not None:
        written = out.with_name(f"{out.stem}_profile_{ns.random_profile}.yaml")
        profile = str(random_profile(ns.random_profile, written, realistic=True))
    with tempfile.TemporaryDirectory(prefix="r2s2r-bench-live-") as tmp:
        report = run(
            profile,
            Path(tmp),
            max_iters=ns.max_iters,
            board_views=ns.board_views,
            excitation_s=ns.excitation_s,
            extrinsics=ns.extrinsics,
            interface=ns.interface,
        )
    print(format_report(report))
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
