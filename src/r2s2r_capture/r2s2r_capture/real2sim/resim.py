"""``r2s2r resim BAG WORLD_DIR``: replay a recorded episode's arm commands in a world and measure the drift.

The world starts from the episode's first recorded joint state (arm positions and velocities; everything else
at the world's home), then the recorded ``/forward_position_controller/commands`` are applied at their
recorded times, each held until the next (as a forward position controller does), after the world's
identified command delay (``<custom><numeric name="r2s2r_command_delay_s">`` written by ``r2s2r real2sim``;
0 for worlds without one).  At every recorded ``/joint_states`` sample the simulated arm is compared with the
recorded one: joint position error (rad) and end-effector position error (m; the recorded end effector is the
world's forward kinematics of the recorded joints, since joint encoders are what the hardware measures).
Object poses are compared only if the bag carries them: an interface bag does not, so the summary says so.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_capture.errors import BagError, refuse_existing
from r2s2r_capture.sysid.joint_motion import arm_topics, read_joint_motion

__all__ = ["ResimResult", "replay_commands", "resim"]


@dataclasses.dataclass(frozen=True)
class ResimResult:
    """Per-sample divergence of a replayed episode.

    Attributes:
        t: sample times (s from the episode start).
        joint_names: arm joints, the columns of ``q_err``.
        q_err: simulated minus recorded joint positions (N, J), rad or m.
        ee_err: end-effector position error (N,), m.
        delay_s: command delay applied (s).
        objects: note on object poses (not in interface bags).
        commands: the topic the replayed commands came from (the set-points sent, or a trajectory
            controller's ``controller_state``).
    """

    t: np.ndarray
    joint_names: tuple[str, ...]
    q_err: np.ndarray
    ee_err: np.ndarray
    delay_s: float
    objects: str
    commands: str = ""

    def stats(self) -> dict[str, Any]:
        """RMSE and max of every joint, all joints together and the end effector."""
        per_joint = {
            n: {
                "rmse": float(np.sqrt(np.mean(self.q_err[:, j] ** 2))),
                "max": float(np.max(np.abs(self.q_err[:, j]))),
            }
            for j, n in enumerate(self.joint_names)
        }
        return {
            "samples": int(self.t.size),
            "duration_s": float(self.t[-1] - self.t[0]) if self.t.size else 0.0,
            "delay_s": self.delay_s,
            "commands": self.commands,
            "joints": per_joint,
            "joint_rmse": float(np.sqrt(np.mean(self.q_err**2))),
            "joint_max": float(np.max(np.abs(self.q_err))),
            "ee_rmse_m": float(np.sqrt(np.mean(self.ee_err**2))),
            "ee_max_m": float(np.max(self.ee_err)),
            "objects": self.objects,
        }

    def summary(self) -> str:
        """Human-readable table."""
        s = self.stats()
        lines = [f"{'joint':<16}{'RMSE':>12}{'max':>12}"]
        lines += [f"{n:<16}{v['rmse']:>12.5f}{v['max']:>12.5f}" for n, v in s["joints"].items()]
        lines.append(f"{'all joints':<16}{s['joint_rmse']:>12.5f}{s['joint_max']:>12.5f}  (rad)")
        lines.append(f"{'end effector':<16}{s['ee_rmse_m'] * 1000:>12.2f}{s['ee_max_m'] * 1000:>12.2f}  (mm)")
        lines.append(
            f"{s['samples']} samples over {s['duration_s']:.2f} s, "
            f"command delay {self.delay_s * 1000:.1f} ms, commands from {self.commands}; "
            f"objects: {self.objects}"
        )
        return "\n".join(lines)

    def write_csv(self, path: str | Path) -> Path:
        """One row per sample: t, per-joint error, end-effector error; never overwrites."""
        out = refuse_existing(path, BagError)
        with out.open("x", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["t_s", *(f"{n}_err" for n in self.joint_names), "ee_err_m"])
            for i in range(self.t.size):
                w.writerow(
                    [f"{self.t[i]:.6f}", *(f"{v:.8f}" for v in self.q_err[i]), f"{self.ee_err[i]:.8f}"]
                )
        return out


def replay_commands(
    world: Any, cmd_t: np.ndarray, cmd_q: np.ndarray, delay: float, times: Sequence[float]
) -> Iterator[int]:
    """Step ``world`` through ``times`` applying recorded arm commands; yields each index once reached.

    Times are on the world's clock (``data.time``).  Each command takes effect ``delay`` s after its stamp
    and holds until the next, as a forward position controller does; the world's own command delay should
    be 0 (the caller schedules with ``delay`` here).
    """
    ci = 0
    for i, t in enumerate(times):
        while world.data.time < t - 1e-9:
            while ci < len(cmd_t) and cmd_t[ci] + delay <= world.data.time + 1e-9:
                world.set_arm_command(cmd_q[ci])
                ci += 1
            world.step(1)
        yield i


def resim(
    bag: str | Path,
    world_dir: str | Path,
    *,
    delay_s: float | None = None,
    window: tuple[float, float] | None = None,
    interface: str = "",
) -> ResimResult:
    """Replay ``bag``'s arm commands in the world and compare with its joint states.

    Args:
        bag: a bag with the interface's joint states and arm commands (or trajectory controller state).
        world_dir: world folder (or bundled world id).
        delay_s: command delay (s); default the world's identified delay (0 if none).
        window: only this part of the bag (bag-clock seconds); default: from the first command on.
        interface: the topic interface the bag follows (empty: the default profile); the commands are
            read as identification reads them (:func:`~r2s2r_capture.sysid.joint_motion.read_joint_motion`).

    Raises:
        BagError: the bag lacks commands or joint states.
    """
    world = SimWorld(world_path(world_dir))
    names = tuple(world.arm_joint_names)
    motion = read_joint_motion(bag, names, window=window, interface=interface)
    if motion is None:
        joint_states, arm_command = arm_topics(interface)
        raise BagError(
            f"bag {bag}: no arm commands ({arm_command}) with joint states ({joint_states}) to replay; "
            "record an episode or an excitation"
        )
    first = motion.cmd_t[0]
    keep = motion.t >= first - 1e-9
    t, q_rec = motion.t[keep], motion.q[keep]
    qd_rec = motion.qd[keep]
    if t.size < 2:
        raise BagError(f"bag {bag}: fewer than 2 joint states after the first command")
    delay = world.command_delay_s if delay_s is None else float(delay_s)
    world.command_delay_s = 0.0  # resim schedules the recorded commands with ``delay`` itself
    model, data = world.model, world.data
    world.reset(0)
    jids = [model.joint(n).id for n in names]
    qadr = np.array([model.jnt_qposadr[j] for j in jids])
    dadr = np.array([model.jnt_dofadr[j] for j in jids])
    data.qpos[qadr], data.qvel[dadr] = q_rec[0], qd_rec[0]
    world.set_arm_command(q_rec[0])
    mujoco.mj_forward(model, data)
    scratch = mujoco.MjData(model)
    ee_name = world.config.robot.ee_site or ""
    sid = -1
    for candidate in (ee_name, world.config.robot.prefix + ee_name):
        if candidate and sid < 0:
            sid = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, candidate))
    t0 = t[0]
    shift = float(data.time) - t0  # bag clock -> the world's clock
    q_err = np.empty_like(q_rec)
    ee_err = np.empty(t.size)
    for i in replay_commands(world, motion.cmd_t + shift, motion.cmd_q, delay, t + shift):
        q_sim = data.qpos[qadr]
        q_err[i] = q_sim - q_rec[i]
        ee_sim = world.ee_pose()[0]
        scratch.qpos[:] = data.qpos
        scratch.qpos[qadr] = q_rec[i]
        mujoco.mj_kinematics(model, scratch)
        ee_rec = scratch.site_xpos[sid] if sid >= 0 else ee_sim
        ee_err[i] = float(np.linalg.norm(ee_sim - ee_rec))
    if not np.all(np.isfinite(q_err)):
        raise BagError(f"bag {bag}: the replay diverged (non-finite state) in {world_dir}")
    objects = "not in the bag (interface bags carry none)"
    return ResimResult(t - t0, names, q_err, ee_err, delay, objects, motion.source)
