"""The Bullet unit's serving rate as a ratio to a bare Bullet loop: ``python -m r2s2r_sim.bench.bullet_unit``.

Both run in this process on the same machine, alternating, over the same sim time of the pick world:

(a) physics: the unit's steps per second (``EmulatedArm.advance``: the servos' stable PD, Bullet's step, the
    state written back into MuJoCo and ``mj_forward`` for the judge) / a bare loop of ``stepSimulation`` on
    the same Bullet scene holding the arm with Bullet's own position motors.
(b) serving: sim seconds per wall second of the unit stepped and drawn at its camera rate (the distorted,
    sensor-modelled frame, as the emulated hardware node and cell serve it) / the bare loop stepped and
    drawn with ``getCameraImage(ER_TINY_RENDERER)`` at the camera's size and rate.

The arm holds its home pose in both (it still settles by micrometres, which the profile's motion blur draws
as three renders a frame, as it would any motion).  The ratios say what the unit's layers cost over Bullet
itself.  Targets: the driver and the mirror cost at most about twice Bullet's step, (a) >= 0.3; a served
frame, which is up to three renders at the distortion's larger size plus the D435 sensor model, at most
four bare frames, (b) >= 0.25.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import pybullet

from r2s2r_sim.bench.report import Ratio, add_out_option, print_ratios, write_results
from r2s2r_sim.hardware.bullet_unit.scene import BulletScene
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import profile_path

__all__ = ["main"]

WORLD = "tabletop-pick-v1"
PHYSICS_TARGET = 0.3
SERVING_TARGET = 0.25


class _BareLoop:
    """Bullet alone: the unit's scene in a fresh client, the arm held by Bullet's position motors."""

    def __init__(self, arm: EmulatedArm) -> None:
        world = arm.world
        self.client = pybullet.connect(pybullet.DIRECT)
        pybullet.setPhysicsEngineParameter(fixedTimeStep=arm.dt, numSubSteps=0, physicsClientId=self.client)
        pybullet.setGravity(*(float(g) for g in world.model.opt.gravity), physicsClientId=self.client)
        self.scene = BulletScene(self.client, world)
        self.scene.set_state(world.data.qpos)
        joints = self.scene.joints
        pybullet.setJointMotorControlArray(
            self.scene.robot_uid,
            [j.index for j in joints],
            pybullet.POSITION_CONTROL,
            targetPositions=[float(world.data.qpos[j.qadr]) for j in joints],
            physicsClientId=self.client,
        )
        cam = arm.profile.camera
        self.size = (cam.width, cam.height)

    def step(self, n: int) -> None:
        for _ in range(n):
            pybullet.stepSimulation(physicsClientId=self.client)

    def render(self) -> None:
        pybullet.getCameraImage(*self.size, renderer=pybullet.ER_TINY_RENDERER, physicsClientId=self.client)

    def close(self) -> None:
        self.scene.close()
        pybullet.disconnect(physicsClientId=self.client)


def _serve(step: Callable[[int], None], render: Callable[[], None], steps: int, per_frame: int) -> float:
    """Wall seconds to advance ``steps`` physics steps, drawing a frame every ``per_frame`` of them."""
    start = time.perf_counter()
    done = 0
    while done < steps:
        n = min(per_frame, steps - done)
        step(n)
        done += n
        render()
    return time.perf_counter() - start


def bench(sim_seconds: float, rounds: int) -> dict[str, Any]:
    """Both ratios, each the median over ``rounds`` alternating runs of ``sim_seconds`` of sim time."""
    arm = EmulatedArm(WORLD, load_hardware_profile(profile_path("bullet")))
    bare = _BareLoop(arm)
    steps = round(sim_seconds / arm.dt)
    per_frame = max(1, round(1.0 / (arm.profile.camera.rate_hz * arm.dt)))
    physics, serving = [], []
    unit_rates, bare_rates, unit_rtf, bare_rtf = [], [], [], []
    with arm.camera_renderer() as camera:

        def unit_render() -> None:
            camera.render(arm.world.data)

        for _ in range(rounds):
            t_unit = _serve(arm.advance, lambda: None, steps, steps)
            t_bare = _serve(bare.step, lambda: None, steps, steps)
            physics.append(t_bare / t_unit)
            unit_rates.append(steps / t_unit)
            bare_rates.append(steps / t_bare)
            s_unit = _serve(arm.advance, unit_render, steps, per_frame)
            s_bare = _serve(bare.step, bare.render, steps, per_frame)
            serving.append(s_bare / s_unit)
            unit_rtf.append(sim_seconds / s_unit)
            bare_rtf.append(sim_seconds / s_bare)
    bare.close()
    med = statistics.median
    return {
        "world": WORLD,
        "sim_seconds": sim_seconds,
        "rounds": rounds,
        "camera_rate_hz": arm.profile.camera.rate_hz,
        "physics_ratio": med(physics),
        "unit_steps_per_s": med(unit_rates),
        "bare_steps_per_s": med(bare_rates),
        "serving_ratio": med(serving),
        "unit_real_time_factor": med(unit_rtf),
        "bare_real_time_factor": med(bare_rtf),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the ratios and write them to ``--out``; 1 when one falls short of its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="sim time per run (s), default 2")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of each, default 3")
    add_out_option(parser)
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1:
        parser.error(f"--seconds must be > 0 and --rounds >= 1, got {args.seconds} and {args.rounds}")
    r = bench(args.seconds, args.rounds)
    ratios = [
        Ratio(
            "(a) Bullet unit physics steps/s / bare stepSimulation",
            r["physics_ratio"],
            PHYSICS_TARGET,
            figures=f"{r['unit_steps_per_s']:.0f} vs {r['bare_steps_per_s']:.0f} steps/s",
        ),
        Ratio(
            "(b) Bullet unit serving (step + frame) / bare step + getCameraImage",
            r["serving_ratio"],
            SERVING_TARGET,
            figures=f"real-time factor {r['unit_real_time_factor']:.2f} vs {r['bare_real_time_factor']:.2f} "
            f"at {r['camera_rate_hz']:g} Hz",
        ),
    ]
    short = [x for x in print_ratios(ratios) if not x.ok]
    write_results({**r, "ratios": [x.as_dict() for x in ratios]}, args.out)
    return 1 if short else 0


if __name__ == "__main__":
    raise SystemExit(main())
