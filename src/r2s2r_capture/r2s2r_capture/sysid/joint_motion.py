"""The arm's motion in a capture bag: joint states and the position commands in effect at each of them.

Identification (:mod:`r2s2r_capture.real2sim.pipeline`), the drawer's force fit
(:mod:`r2s2r_capture.real2sim.articulation`) and re-simulation (:mod:`r2s2r_capture.real2sim.resim`) all read
the arm this one way.

Which commands: on an interface whose arm runs a trajectory controller, the controller's own
``controller_state`` reference, where the bag has it: stamped by the controller on the driver's clock, it
is what the servos were asked at each moment, however late the trajectory arrived or the driver ran. The
set-points the capture sent (``arm_command``, stamped when sent) are the fallback, and the only source for
a forward position controller, which publishes no state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from r2s2r_sim.interface import CommandPath, load_interface

from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.errors import BagError

__all__ = ["JointMotion", "arm_topics", "read_joint_motion", "reading_noise", "reference_topic"]


@dataclasses.dataclass(frozen=True)
class JointMotion:
    """Arm motion from a bag: joint-state times (s, bag clock), measured q, qd and the commands in effect.

    ``q_cmd[i]``: the command in effect at ``t[i]``, the latest sent at or before it, or the controller's
    reference interpolated there; ``cmd_t``/``cmd_q`` are the raw commands or reference samples (s, rad).
    Columns follow ``joint_names``.  ``effort``: the reported efforts, or ``None`` when the driver does not
    fill ``JointState.effort`` for every joint.  ``source``: the topic the commands came from.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    q_cmd: np.ndarray
    cmd_t: np.ndarray
    cmd_q: np.ndarray
    joint_names: tuple[str, ...]
    effort: np.ndarray | None = None
    source: str = ""


def _stamp_s(msg: Any, fallback_ns: int) -> float:
    stamp = getattr(getattr(msg, "header", None), "stamp", None)
    if stamp is None or (stamp.sec == 0 and stamp.nanosec == 0):
        return fallback_ns * 1e-9
    return stamp.sec + stamp.nanosec * 1e-9


def arm_topics(interface: str = "") -> tuple[str, str]:
    """The joint-state and arm-command topic names of an ``interface`` profile or file (empty: the default).

    Raises:
        InterfaceError: unknown profile or unreadable interface file.
    """
    iface = load_interface(interface)
    return iface.topic("joint_states"), iface.topic("arm_command")


def read_joint_motion(
    bag: str | Path,
    arm_joints: Sequence[str],
    *,
    window: tuple[float, float] | None = None,
    interface: str = "",
    reference: bool = True,
) -> JointMotion | None:
    """Joint states and arm commands of a bag (optionally only within ``window``, s); None without commands.

    The commands are the trajectory controller's reference where the interface has one and the bag holds
    it (see the module docstring), else the ``arm_command`` set-points.

    ``interface`` names the topic interface the bag follows (empty: the default profile); ``reference``
    False reads the sent set-points even where the controller's reference is recorded.

    Raises:
        BagError: unreadable bag, or joint states lacking an arm joint.
    """
    joint_states, arm_command = arm_topics(interface)
    state_topic = reference_topic(interface) if reference else None

    ts, qs, qds, efs, cts, cqs = [], [], [], [], [], []
    refs: list[tuple[float, np.ndarray]] = []
    idx: list[int] | None = None
    with BagReader(bag) as reader:
        topics = [joint_states, arm_command]
        if state_topic is not None and state_topic in reader.topics:
            topics.append(state_topic)
        for m in reader.messages(topics):
            msg = reader.deserialize(m)
            if m.topic == state_topic:
                t = _stamp_s(msg, m.timestamp_ns)
                q_ref = _reference(msg, arm_joints)
                if q_ref is not None and not (window and not window[0] <= t <= window[1]):
                    refs.append((t, q_ref))
                continue
            if m.topic == arm_command:
                t = m.timestamp_ns * 1e-9
                if window and not window[0] <= t <= window[1]:
                    continue
                cts.append(t)
                cqs.append(np.asarray(msg.data, dtype=np.float64))
                continue
            t = _stamp_s(msg, m.timestamp_ns)
            if window and not window[0] <= t <= window[1]:
                continue
            names = list(msg.name)
            if idx is None or len(names) != len(idx):
                missing = [n for n in arm_joints if n not in names]
                if missing:
                    raise BagError(f"bag {bag}: {joint_states} lacks arm joints {missing} (has {names})")
                idx = [names.index(n) for n in arm_joints]
            pos, vel, eff = np.asarray(msg.position), np.asarray(msg.velocity), np.asarray(msg.effort)
            efs.append(eff[idx] if eff.size == len(names) else None)
            ts.append(t)
            qs.append(pos[idx])
            qds.append(vel[idx] if vel.size == len(names) else np.zeros(len(idx)))
    if (not cts and len(refs) < 2) or len(ts) < 2:
        return None
    bad = [i for i, c in enumerate(cqs) if c.shape != (len(arm_joints),)]
    if bad:
        raise BagError(
            f"bag {bag}: {arm_command} message {bad[0]} has {cqs[bad[0]].size} values, expected "
            f"{len(arm_joints)} ({list(arm_joints)})"
        )
    t = np.array(ts)
    order = np.argsort(t, kind="stable")
    t = t[order]
    keep = np.concatenate([[True], np.diff(t) > 0])
    t, q, qd = t[keep], np.array(qs)[order][keep], np.array(qds)[order][keep]
    effort = None if any(e is None for e in efs) else np.array(efs)[order][keep]
    if len(refs) >= 2:
        refs.sort(key=lambda r: r[0])
        cmd_t, cmd_q = np.array([r[0] for r in refs]), np.array([r[1] for r in refs])
        # The reference is continuous along a trajectory: interpolated, not held, between its samples.
        q_cmd = np.column_stack([np.interp(t, cmd_t, cmd_q[:, j]) for j in range(cmd_q.shape[1])])
        before = t < cmd_t[0]
        q_cmd[before] = q[before]  # before the first sample the arm holds where it is
        return JointMotion(t, q, qd, q_cmd, cmd_t, cmd_q, tuple(arm_joints), effort, str(state_topic))
    cmd_t, cmd_q = np.array(cts), np.array(cqs)
    k = np.searchsorted(cmd_t, t + 1e-9, side="right") - 1
    q_cmd = cmd_q[np.clip(k, 0, None)]
    q_cmd[k < 0] = q[k < 0]  # before the first command the arm holds where it is
    return JointMotion(t, q, qd, q_cmd, cmd_t, cmd_q, tuple(arm_joints), effort, arm_command)


def reference_topic(interface: str = "") -> str | None:
    """The trajectory controller's state topic where the interface's arm runs one, else None."""
    iface = load_interface(interface)
    if iface.command is not CommandPath.TRAJECTORY or "controller_state" not in iface.topics:
        return None
    return iface.topic("controller_state")


def _reference(msg: Any, arm_joints: Sequence[str]) -> np.ndarray | None:
    """A controller state's reference positions in ``arm_joints`` order; None if it lacks one of them."""
    names, positions = list(msg.joint_names), list(msg.reference.positions)
    if len(positions) != len(names) or any(n not in names for n in arm_joints):
        return None
    return np.array([positions[names.index(n)] for n in arm_joints], dtype=np.float64)


def reading_noise(motion: JointMotion) -> tuple[float, float]:
    """Std of the white noise on the reported joint positions and velocities (median over the joints).

    Third differences of a smooth motion sampled at the driver's rate are almost zero (jerk times dt^3,
    about 1e-7 rad at 500 Hz), while white noise of std ``s`` gives them std ``sqrt(20) s``; a robust
    spread (1.4826 MAD) passes over the few samples where the motion itself changes abruptly.  Encoder
    quantisation finer than the motion shows up here as its own white noise (step / sqrt(12)).
    """

    def spread(values: np.ndarray) -> float:
        if values.shape[0] < 8:
            return 0.0
        third = np.diff(values, n=3, axis=0)
        mad = np.median(np.abs(third - np.median(third, axis=0)), axis=0)
        return float(np.median(1.4826 * mad / np.sqrt(20.0)))

    return spread(np.asarray(motion.q, dtype=np.float64)), spread(np.asarray(motion.qd, dtype=np.float64))
