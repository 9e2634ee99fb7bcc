"""The capture phases on a recording stand-in of the cell I/O: order, markers, and the excitation's envelope.

The phases are written once (r2s2r_capture.procedures.phases) for the in-process emulator and the live ROS
client; here a fake cell records every call, so the sequence and the envelope's refusal are checked without
an emulator or DDS.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from r2s2r_capture.errors import EnvelopeViolation  # noqa: E402
from r2s2r_capture.procedures.capture_config import CaptureConfig, live_excitation  # noqa: E402
from r2s2r_capture.procedures.phases import ExcitationStopped, record_phases  # noqa: E402
from r2s2r_capture.sysid.envelope import ArmTemplate, SafetyEnvelope  # noqa: E402
from r2s2r_capture.sysid.excitation_monitor import ExcitationMonitor  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402


class FakeCell:
    """A cell I/O that records calls; the arm follows each command exactly, the clock ticks per command."""

    camera_period_s = 1.0 / 30.0

    def __init__(self, world: SimWorld, stop_after: int | None = None) -> None:
        self.model = world.model
        self.arm_joint_names = tuple(world.arm_joint_names)
        idx = [list(world.joint_names).index(n) for n in self.arm_joint_names]
        self.q = world.joint_state()[0][idx].copy()
        self.home = self.q.copy()
        self.t = 0.0
        self.calls: list[tuple[str, Any]] = []
        self.commands: list[np.ndarray] = []
        self.stop_after = stop_after

    def now_s(self) -> float:
        return self.t

    def camera_model(self) -> tuple[np.ndarray, tuple[int, int]]:
        return np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]]), (640, 480)

    def marker(self, phase: str, event: str, **extra: Any) -> None:
        self.calls.append(("marker", (phase, event)))

    def place_board(self, T: np.ndarray | None, *, frame: str, what: str) -> None:
        self.calls.append(("board", frame if T is not None else None))

    def frame(self, depth_too: bool) -> None:
        self.calls.append(("frame", depth_too))

    def hold(self, seconds: float) -> None:
        self.t += seconds

    def arm_positions(self) -> np.ndarray:
        return self.q.copy()

    def stream(self, commands: np.ndarray, rate_hz: float, monitor: ExcitationMonitor | None = None) -> None:
        self.calls.append(("stream", len(commands)))
        for q in commands:
            self.t += 1.0 / rate_hz
            if monitor is not None:
                monitor.joint_state(self.t, self.q, np.zeros_like(self.q))
                if self.stop_after is not None and len(self.commands) >= self.stop_after:
                    monitor.request_stop("operator")
                verdict = monitor.check(self.t, q)
                if verdict.stop:
                    raise ExcitationStopped(verdict.detail)
            self.commands.append(np.asarray(q))
            self.q = np.asarray(q, dtype=np.float64).copy()


@pytest.fixture(scope="module")
def world() -> SimWorld:
    return SimWorld(world_path("tabletop-pick-v1"))


CFG = CaptureConfig(n_intrinsics_views=3, n_scene_frames=2, excitation=live_excitation(4.0))


def _run(cell: FakeCell, world: SimWorld, envelope: SafetyEnvelope) -> None:
    record_phases(cell, CFG, lambda _line: None, envelope=envelope, template=ArmTemplate.from_world(world))


def test_phases_in_order_and_the_checked_excitation_returns_home(world: SimWorld) -> None:
    cell = FakeCell(world)
    record_phases(
        cell, CFG, lambda _line: None, envelope=SafetyEnvelope(), template=ArmTemplate.from_world(world)
    )
    markers = [c[1] for c in cell.calls if c[0] == "marker"]
    assert markers == [
        ("board_intrinsics", "start"),
        ("board_intrinsics", "end"),
        *[(p, e) for _ in range(3) for p, e in (("board_known_pose", "start"), ("board_known_pose", "end"))],
        ("scene", "start"),
        ("scene", "end"),
        ("excitation", "start"),
        ("excitation", "end"),
    ]
    frames = [c[1] for c in cell.calls if c[0] == "frame"]
    assert frames == [False] * (3 + 3) + [True] * 2  # depth only for the scene
    boards = [c[1] for c in cell.calls if c[0] == "board"]
    assert boards == ["camera"] * 3 + ["world"] * 3 + [None]
    # Approach, excitation and return: it starts next to home and ends exactly there, within the caps.
    q = np.array(cell.commands)
    assert np.abs(q[0] - cell.home).max() < 0.01
    np.testing.assert_allclose(q[-1], cell.home, atol=1e-9)
    speed = np.abs(np.diff(q, axis=0)).max() * CFG.excitation.rate_hz
    assert speed <= SafetyEnvelope().velocity_cap_rad_s * 1.01
    assert np.ptp(q, axis=0).min() > 0.05  # every arm joint is excited


def test_an_excitation_outside_the_envelope_is_refused_before_anything_moves(world: SimWorld) -> None:
    cell = FakeCell(world)
    tight = SafetyEnvelope(velocity_cap_rad_s=0.05)
    with pytest.raises(EnvelopeViolation, match="refused before anything moved.*velocity"):
        _run(cell, world, tight)
    assert cell.calls == [] and cell.commands == []  # not even a board view was asked for


def test_a_stop_during_the_excitation_stops_streaming(world: SimWorld) -> None:
    cell = FakeCell(world, stop_after=150)
    with pytest.raises(ExcitationStopped, match="operator"):
        record_phases(
            cell, CFG, lambda _line: None, envelope=SafetyEnvelope(), template=ArmTemplate.from_world(world)
        )
    assert len(cell.commands) == 150


def test_the_board_stand_in_parses_only_rigid_poses() -> None:
    pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
    from r2s2r_sim.ros.capture_board import parse_pose  # reason: imports rclpy, skipped above without it

    frame, T = parse_pose('{"frame": "camera", "pose": [[1,0,0,0.1],[0,1,0,0],[0,0,1,0.5],[0,0,0,1]]}')
    assert frame == "camera" and T[0, 3] == 0.1
    frame, T = parse_pose('{"frame": "flange", "pose": [[1,0,0,0],[0,1,0,0],[0,0,1,0.02],[0,0,0,1]]}')
    assert frame == "flange" and T[2, 3] == 0.02  # mounted on the tool site, moving with the arm
    with pytest.raises(ValueError, match="frame must be one of"):
        parse_pose('{"frame": "table", "pose": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}')
    with pytest.raises(ValueError, match="not a rotation"):
        parse_pose('{"frame": "world", "pose": [[2,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]}')
    with pytest.raises(ValueError, match="expected JSON"):
        parse_pose("not json")
