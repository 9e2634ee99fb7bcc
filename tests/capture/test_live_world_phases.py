"""A live capture says, before anything moves, which of the world's own phases it cannot run over ROS yet."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")

from r2s2r_capture.errors import CaptureError  # noqa: E402
from r2s2r_capture.procedures.capture_config import CaptureConfig  # noqa: E402
from r2s2r_capture.ros.live_capture import LiveOptions, check_world_phases  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402


def _said(world: str, cfg: CaptureConfig) -> list[str]:
    lines: list[str] = []
    check_world_phases(SimWorld(world_path(world)), cfg, LiveOptions(yes=True, prompt=None, say=lines.append))
    return lines


def test_a_drawer_world_is_refused_naming_the_in_process_capture() -> None:
    with pytest.raises(CaptureError, match=r"tabletop-drawer-v1.*articulation phase.*--emulated"):
        _said("tabletop-drawer-v1", CaptureConfig())


def test_a_push_world_goes_on_without_its_slide_and_says_so() -> None:
    (line,) = _said("tabletop-push-v1", CaptureConfig())
    assert line.startswith("slide: not run live") and "template's sliding friction" in line
    assert _said("tabletop-push-v1", CaptureConfig(slide=None)) == []  # --no-slide asked for none
    assert _said("tabletop-pick-v1", CaptureConfig()) == []
