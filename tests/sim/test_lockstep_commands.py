"""Lockstep waits, after each acknowledgement, for the commands the interface streams once per period.

On a forward profile the policy sends an arm and a gripper command every period. On a trajectory profile it
streams only the arm (the ``joint_trajectory`` topic); the gripper is an action whose goal goes out only
when its target changes, so waiting for a gripper command there would stall every period for the grace time.
"""

from __future__ import annotations

from typing import Any

import pytest
from r2s2r_sim.serving import sim_server
from r2s2r_sim.serving.loop import ServingThreads
from r2s2r_sim.serving.sim_server import SimServer
from r2s2r_sim.serving.sim_server_config import SimNodeConfig
from r2s2r_sim.worlds import world_path


class _Log:
    def info(self, message: str, **kwargs: Any) -> None:
        pass

    warning = error = debug = info


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> SimServer:
    # No grace: a missing command must keep physics waiting however slow the machine is.
    monkeypatch.setattr(sim_server, "COMMAND_GRACE_S", float("inf"))
    cfg = SimNodeConfig(lockstep=True, cameras_enabled=False)
    return SimServer(cfg, world_path(cfg.world), "", _Log(), ServingThreads("test", _Log()))


def test_forward_profile_waits_for_the_arm_and_the_gripper_command(server: SimServer) -> None:
    server.acknowledge(1)
    server.command("arm", lambda world: None)
    assert not server._commands_caught_up()
    server.command("gripper", lambda world: None)
    assert server._commands_caught_up()


def test_trajectory_profile_waits_for_the_streamed_trajectory_only(server: SimServer) -> None:
    server.command_streams = ("arm",)
    server.acknowledge(1)
    assert not server._commands_caught_up()
    server.note_command("arm")  # a joint_trajectory message taken by the controller
    assert server._commands_caught_up()
    server.acknowledge(2)
    assert not server._commands_caught_up()


def test_a_lost_command_costs_one_grace_not_one_per_period(
    server: SimServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command lost on the way (a killed policy's last, a restarted one's first) is written off."""
    monkeypatch.setattr(sim_server, "COMMAND_GRACE_S", 3600.0)
    server.acknowledge(1)  # its arm and gripper commands never arrive
    assert not server._commands_caught_up()
    server._ack_wall -= 3601.0  # the grace has passed (as if an hour went by)
    assert server._commands_caught_up()
    server.acknowledge(2)
    assert not server._commands_caught_up()
    server.command("arm", lambda world: None)
    server.command("gripper", lambda world: None)
    assert server._commands_caught_up()  # the next period's own commands suffice again
