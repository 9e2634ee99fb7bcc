"""What a capture records: its configuration, its topics, the board it shows and its phase markers.

Shared by the in-process capture of the emulated hardware (:mod:`r2s2r_capture.procedures.session`), the live
capture over ROS (:mod:`r2s2r_capture.ros.live_capture`) and real2sim, which reads the bag back.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from r2s2r_sim.interface import CommandPath, load_interface

from r2s2r_capture.bags.messages import BagMessages
from r2s2r_capture.bags.writer import BagWriter, offered_qos
from r2s2r_capture.calibration.charuco import CharucoBoardSpec
from r2s2r_capture.errors import CaptureError
from r2s2r_capture.procedures.articulation import ArticulationConfig
from r2s2r_capture.procedures.hand_eye_phase import HandEyeConfig
from r2s2r_capture.procedures.slide import SlideConfig
from r2s2r_capture.sysid.recording import ExcitationConfig

__all__ = [
    "CAPTURE_BOARD",
    "EXTRINSICS",
    "PHASES",
    "PHASE_TOPIC",
    "CaptureConfig",
    "CaptureMessages",
    "CaptureSummary",
    "add_extrinsics_argument",
    "board_from_json",
    "board_to_json",
    "live_excitation",
    "topic_names",
]

PHASE_TOPIC = "/r2s2r/capture/phase"
PHASES = ("board_intrinsics", "board_known_pose", "hand_eye", "scene", "excitation")
# How the camera's pose in the world is measured: the board at known poses on the table, or the board on the
# flange carried by the arm (eye-to-hand calibration).
EXTRINSICS = ("known_pose", "hand_eye")
# An A3 print: 7 x 5 squares of 6 cm (42 x 30 cm).  Bigger squares than the A4 default board, so that the
# board still has ~30 px squares lying on the table ~1 m from the camera.
CAPTURE_BOARD = CharucoBoardSpec(squares_x=7, squares_y=5, square_m=0.06, marker_m=0.045)


class _ExtrinsicsName(argparse.Action):
    """Stores ``hand-eye`` / ``known-pose`` as the :data:`EXTRINSICS` name (``hand_eye``, ``known_pose``)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, str(values).replace("-", "_"))


def add_extrinsics_argument(parser: argparse.ArgumentParser, default: str = "hand_eye") -> None:
    """``--extrinsics hand-eye|known-pose``, as every capture command and bench takes it.

    The parsed value is the :data:`EXTRINSICS` name that :class:`CaptureConfig` takes.
    """
    parser.add_argument(
        "--extrinsics",
        action=_ExtrinsicsName,
        choices=tuple(name.replace("_", "-") for name in EXTRINSICS),
        default=default,
        help="how the camera's pose is measured: hand-eye (the board on the flange, carried by the arm "
        "through poses the camera sees) or known-pose (the board flat on the table at poses you know); "
        f"default {default.replace('_', '-')}",
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class CaptureConfig:
    """What the emulated capture records.

    Attributes:
        board: the ChArUco board (written into the phase markers so real2sim knows what was printed).
        n_intrinsics_views: board views for intrinsics (held at 0.55-0.9 m, tilted 15-40 deg).
        known_board_poses: board placements flat on the table: ``(x, y, yaw)`` of the board centre (m, rad).
        table_top_z: height of the table top (m) the known poses lie on.
        n_scene_frames: RGB-D frames of the scene (fixed camera: same pose, averaged by the TSDF).
        excitation: the excitation trajectory; ``rate_hz`` is the command rate.
        settle_s: the arm holds still this long before the excitation (s).
        seed: episode seed (object placement) and excitation seed.
        articulation: the ``articulation`` phase, recorded after the excitation in a world whose task is an
            articulated object (the drawer): see :mod:`r2s2r_capture.procedures.articulation`.
        slide: the ``slide`` phase after the excitation in a world whose task pushes its object (flicks that
            measure how far it slides, :mod:`r2s2r_capture.procedures.slide`); ``None`` leaves it out.
        interface: topic interface profile or file the bag's topic names follow (empty: the default).
        extrinsics: ``known_pose`` (the board flat on the table at ``known_board_poses``) or ``hand_eye``
            (the board on the flange, :mod:`r2s2r_capture.procedures.hand_eye_phase`).
        hand_eye: the hand-eye phase's poses and mount.
    """

    board: CharucoBoardSpec = CAPTURE_BOARD
    n_intrinsics_views: int = 12
    known_board_poses: tuple[tuple[float, float, float], ...] = (
        (0.5, 0.25, 1.57),
        (0.6, -0.12, 1.5),
        (0.38, 0.05, 1.45),
    )
    table_top_z: float = 0.75
    n_scene_frames: int = 2
    excitation: ExcitationConfig = dataclasses.field(
        # 30 s of 8 sines up to 1.6 Hz at up to 2 rad/s: the 12 s / 5-sine / 1.2 rad/s trajectory left the
        # wrists' gains, armature and friction 16-33 % off on the emulator; this one brings all but the
        # tool roll (wrist_3) within 4 % (bench_real2sim).  Check 2 rad/s against your arm's limits.
        default_factory=lambda: ExcitationConfig(
            duration_s=30.0,
            rate_hz=500.0,
            base_freq_hz=0.2,
            n_harmonics=8,
            range_fraction=0.35,
            max_velocity=2.0,
            ramp_s=0.5,
        )
    )
    settle_s: float = 0.5
    seed: int = 0
    interface: str = ""
    articulation: ArticulationConfig = dataclasses.field(default_factory=ArticulationConfig)
    slide: SlideConfig | None = dataclasses.field(default_factory=SlideConfig)
    extrinsics: str = "known_pose"
    hand_eye: HandEyeConfig = dataclasses.field(default_factory=HandEyeConfig)

    def __post_init__(self) -> None:
        """Validate counts (errors name the field)."""
        if self.extrinsics not in EXTRINSICS:
            raise CaptureError(f"extrinsics must be one of {EXTRINSICS}: got {self.extrinsics!r}")
        if self.n_intrinsics_views < 0 or self.n_scene_frames < 0:
            raise CaptureError(
                f"n_intrinsics_views and n_scene_frames must be >= 0: got {self.n_intrinsics_views} and "
                f"{self.n_scene_frames}"
            )
        if not self.settle_s >= 0:
            raise CaptureError(f"settle_s must be >= 0: got {self.settle_s}")


@dataclasses.dataclass(frozen=True)
class CaptureSummary:
    """What was written: the bag, message counts per phase, and the emulator's ground truth for benchmarks.

    ``truth`` is read from the emulated world after the scene phase (object poses and geom sizes, camera
    pose); it is never written into the bag.
    """

    bag: Path
    counts: dict[str, int]
    truth: dict[str, Any]


def live_excitation(duration_s: float = 20.0) -> ExcitationConfig:
    """A gentle excitation for a live arm, inside the default safety envelope's speed and acceleration caps.

    Sines up to 0.5 Hz at up to 0.6 rad/s, commanded at 100 Hz (what a client streams steadily over DDS).
    The emulator's documented 30 s / 2 rad/s trajectory identifies more but needs an envelope written for it.
    """
    return ExcitationConfig(
        duration_s=duration_s,
        rate_hz=100.0,
        base_freq_hz=0.1,
        n_harmonics=5,
        range_fraction=0.35,
        max_velocity=0.6,
        ramp_s=1.0,
    )


def board_to_json(board: CharucoBoardSpec) -> dict[str, Any]:
    """The board definition as plain JSON values."""
    return dataclasses.asdict(board)


def board_from_json(data: dict[str, Any]) -> CharucoBoardSpec:
    """Inverse of :func:`board_to_json` (raises ``CalibrationError`` for invalid values)."""
    return CharucoBoardSpec(
        squares_x=int(data["squares_x"]),
        squares_y=int(data["squares_y"]),
        square_m=float(data["square_m"]),
        marker_m=float(data["marker_m"]),
        dictionary=str(data["dictionary"]),
    )


_CAPTURE_TOPICS = (
    "joint_states",
    "arm_command",
    "gripper_command",
    "color_image",
    "depth_image",
    "color_info",
)


def topic_names(camera: str, interface: str = "") -> dict[str, tuple[str, str]]:
    """Interface topics a capture uses: key -> ``(name, type)``, from the ``interface`` profile.

    Args:
        camera: ROS camera name (world.yaml's ``cameras[].name``).
        interface: profile name or interface file (``config/interface.yaml``); empty: the default profile.

    Raises:
        InterfaceError: unknown profile or unreadable interface file.
    """
    iface = load_interface(interface)
    names = {}
    # A trajectory controller's state: its reference is what identification reads (sysid.joint_motion).
    trajectory = ("controller_state",) if iface.command is CommandPath.TRAJECTORY else ()
    for key in (*_CAPTURE_TOPICS, *trajectory):
        spec = iface.topic_spec(key)
        names[key] = (iface.topic(key, camera if spec.per_camera else None), spec.type)
    names["phase"] = (PHASE_TOPIC, "std_msgs/msg/String")
    return names


# ------------------------------------------------------------------------------------------- messages


class CaptureMessages(BagMessages):
    """The capture's topics (names and the drivers' QoS from the interface profile) and its phase markers."""

    def __init__(self, bag: BagWriter, camera: str, interface: str) -> None:
        super().__init__(bag)
        iface = load_interface(interface)
        names = topic_names(camera, interface)
        for key, (name, msgtype) in names.items():
            # The drivers' QoS from the interface profile, so a replay offers what the drivers offer.
            offered = ()
            if key in iface.topics:
                q = iface.topics[key].qos
                if q.preset == "system_default":
                    # what Fast DDS resolves the middleware default to (reliable, transient local, keep 1)
                    rel, dur, depth = "reliable", "transient_local", 1
                else:
                    rel, dur, depth = q.reliability.value, q.durability.value, q.depth
                offered = (offered_qos(reliability=rel, durability=dur, depth=depth),)
            self.add_topic(key, name, msgtype, offered)

    def phase(self, t_ns: int, phase: str, event: str, **extra: Any) -> None:
        """A phase marker: JSON ``{"phase", "event", ...}`` on the phase topic."""
        self.string("phase", t_ns, json.dumps({"phase": phase, "event": event, **extra}, sort_keys=True))
