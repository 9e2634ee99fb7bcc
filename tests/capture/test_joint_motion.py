"""Which commands identification reads: the trajectory controller's reference where a bag has it.

The bag is written as a live capture against a trajectory controller writes it: joint states and the
controller's state as they came off the wire (header stamps on the driver's clock), and the set-points the
capture sent, stamped when sent. Here the sent stamps run 0.3 s early (a trajectory that waited in a queue,
a driver that ran late), so only the controller's reference says what the servos were asked when.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from r2s2r_capture.bags.messages import BagMessages
from r2s2r_capture.bags.writer import BagWriter
from r2s2r_capture.errors import BagError
from r2s2r_capture.real2sim.resim import resim
from r2s2r_capture.sysid.joint_motion import read_joint_motion, reference_topic
from r2s2r_sim.interface import load_interface
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

STATE = "control_msgs/msg/JointTrajectoryControllerState"

PROFILE = "ur_robot_driver"  # command: trajectory
NS = 1_000_000_000
T0 = 100 * NS


WORLD = "tabletop-pick-v1"
# The bundled world's arm joints (its joint states list the arm first), not loaded at collection.
JOINTS = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")


@functools.cache
def _home() -> np.ndarray:
    world = SimWorld(world_path(WORLD))
    assert tuple(world.arm_joint_names) == JOINTS
    return world.joint_state()[0][: len(JOINTS)].copy()


def _reference(t: float) -> np.ndarray:
    """Two joints swing about the world's home pose; the rest hold."""
    q = _home().copy()
    q[0] += 0.3 * np.sin(2.0 * t)
    q[1] += 0.2 * (1.0 - np.cos(1.5 * t))
    return q


def _state(msgs: BagMessages, t_ns: int, names: list[str], q: np.ndarray) -> None:
    """A trajectory controller's state: its reference at ``t_ns``, the rest of the message empty."""
    types = msgs.ts.types
    none = np.zeros(0)
    zero = types["builtin_interfaces/msg/Duration"](sec=0, nanosec=0)

    def point(positions: np.ndarray) -> object:
        return types["trajectory_msgs/msg/JointTrajectoryPoint"](
            positions=positions, velocities=none, accelerations=none, effort=none, time_from_start=zero
        )

    def multi() -> object:
        return types["trajectory_msgs/msg/MultiDOFJointTrajectoryPoint"](
            transforms=[], velocities=[], accelerations=[], time_from_start=zero
        )

    msg = types[STATE](
        header=msgs.header(t_ns),
        joint_names=names,
        reference=point(np.asarray(q, dtype=np.float64)),
        feedback=point(none),
        error=point(none),
        output=point(none),
        multi_dof_joint_names=[],
        multi_dof_reference=multi(),
        multi_dof_feedback=multi(),
        multi_dof_error=multi(),
        multi_dof_output=multi(),
        speed_scaling_factor=1.0,
    )
    msgs.write("controller_state", t_ns, msg)


def _write(path: Path, *, state_joints: list[str] | None = None) -> None:
    iface = load_interface(PROFILE)
    state_joints = list(JOINTS) if state_joints is None else state_joints
    with BagWriter(path) as bag:
        msgs = BagMessages(bag)
        msgs.add_topic("joint_states", iface.topic("joint_states"), "sensor_msgs/msg/JointState")
        msgs.add_topic("arm_command", iface.topic("arm_command"), "std_msgs/msg/Float64MultiArray")
        try:  # the definition comes from an installed control_msgs
            msgs.add_topic("controller_state", iface.topic("controller_state"), STATE)
        except BagError as err:
            pytest.skip(f"control_msgs is not installed ({err}); run `make setup`")
        for k in range(400):  # 2 s of joint states at 200 Hz: the arm follows the reference 20 ms late
            t_ns = T0 + k * 5_000_000
            t = (t_ns - T0) / NS
            zero = np.zeros(len(JOINTS))
            msgs.joint_state(t_ns, JOINTS, _reference(t - 0.02), zero, zero)
            if k % 4 == 0:  # the controller's state at 50 Hz, its reference at that moment
                _state(msgs, t_ns, state_joints, _reference(t))
            if k % 2 == 0:  # set-points at 100 Hz, written 0.3 s before the controller ran them
                msgs.array("arm_command", t_ns - 300_000_000, _reference(t))


def test_on_a_trajectory_interface_the_controllers_reference_is_the_command(tmp_path: Path) -> None:
    _write(tmp_path / "bag")
    motion = read_joint_motion(tmp_path / "bag", JOINTS, interface=PROFILE)
    assert motion is not None and motion.source == reference_topic(PROFILE)
    assert motion.cmd_t.size == 100  # the reference samples, not the 200 set-points
    t = motion.t - T0 / NS
    inside = (t > 0.05) & (t < 1.9)
    # Interpolated between its samples: within the curvature of a 20 ms chord of the reference.
    np.testing.assert_allclose(motion.q_cmd[inside], np.array([_reference(x) for x in t[inside]]), atol=2e-4)
    # Against it the arm lags by the servo's 20 ms, not by the 0.3 s the sent stamps say.
    lag = np.abs(motion.q_cmd[inside] - motion.q[inside]).max()
    assert lag < 0.02


def test_the_sent_set_points_where_there_is_no_usable_reference(tmp_path: Path) -> None:
    _write(tmp_path / "bag", state_joints=[JOINTS[0]])  # a controller of other joints: no whole reference
    motion = read_joint_motion(tmp_path / "bag", JOINTS, interface=PROFILE)
    assert motion is not None and motion.source == load_interface(PROFILE).topic("arm_command")
    assert motion.cmd_t.size == 200
    # The default interface drives a forward controller, which has no reference to read.
    _write(tmp_path / "bag2")
    forward = read_joint_motion(tmp_path / "bag2", JOINTS)
    assert reference_topic("") is None and forward is not None
    assert forward.source == load_interface("").topic("arm_command") and forward.cmd_t.size == 200


def test_resim_replays_what_identification_fitted(tmp_path: Path) -> None:
    """``r2s2r resim --interface`` reads the commands as identification does: the reference, else the sent."""
    _write(tmp_path / "bag")
    replayed = resim(tmp_path / "bag", WORLD, interface=PROFILE, delay_s=0.0)
    assert replayed.commands == reference_topic(PROFILE)
    sent = resim(tmp_path / "bag", WORLD, delay_s=0.0)
    assert sent.commands == load_interface("").topic("arm_command")
    # The set-points' stamps run 0.3 s early: replayed by them, the world leads the recorded arm.
    assert replayed.stats()["joint_rmse"] < 0.5 * sent.stats()["joint_rmse"]
