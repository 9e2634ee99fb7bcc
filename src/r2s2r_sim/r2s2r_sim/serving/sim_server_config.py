"""The sim node's parameters: their declarations (description, range), the typed config and its checks.

ROS-free: the node declares :data:`PARAMS` and builds :class:`SimNodeConfig` from the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from r2s2r_sim.serving.loop import NS
from r2s2r_sim.variations import VariationConfig, parse_variation_text
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["PARAMS", "SimNodeConfig", "SimNodeError", "param_error", "parse_variation_config"]


class SimNodeError(ValueError):
    """An invalid sim node parameter; the message names the parameter, the value and what is allowed."""


@dataclass(frozen=True, kw_only=True)
class SimNodeConfig:
    """The sim node's parameters, read once at start-up (see ``config/sim_node.yaml``)."""

    world: str = "tabletop-pick-v1"
    seed: int = 0
    real_time: bool = False
    joint_state_rate_hz: float = 500.0
    camera_rate_hz: float = 0.0
    cameras_enabled: bool = True
    lockstep: bool = False
    control_rate_hz: float = 10.0
    tf_rate_hz: float = 100.0
    publish_clock: bool = True
    policy_id: str = ""
    variations: str = ""
    ack_timeout_s: float = 10.0
    render_profile: str = ""
    compressed_images: bool = False

    def check_rates(self, world: SimWorld) -> None:
        """Check every rate against ``world``'s physics rate and the control period against its timestep.

        Raises:
            SimNodeError: naming the parameter (or the world.yaml camera), its value and the limit.
        """
        dt = world.timestep
        physics_hz = 1.0 / dt
        rates: list[tuple[str, float]] = [
            ("joint_state_rate_hz", self.joint_state_rate_hz),
            ("tf_rate_hz", self.tf_rate_hz),
            ("control_rate_hz", self.control_rate_hz),
        ]
        if self.cameras_enabled:
            for cam in world.config.cameras:
                rate = self.camera_rate_hz if self.camera_rate_hz > 0 else cam.rate_hz
                rates.append(
                    ("camera_rate_hz" if self.camera_rate_hz > 0 else f"cameras[{cam.name}].rate_hz", rate)
                )
        for name, rate in rates:
            if rate > physics_hz * (1 + 1e-9):
                raise SimNodeError(
                    f"parameter {name}: got {rate} Hz, allowed: at most the physics rate {physics_hz:g} Hz "
                    f"(world timestep {dt} s)"
                )
        steps = NS / self.control_rate_hz / round(dt * NS)
        if abs(steps - round(steps)) > 1e-6:
            raise SimNodeError(
                f"parameter control_rate_hz: control period 1/{self.control_rate_hz} s must be an "
                "integer multiple "
                f"of the world timestep {dt} s: got {steps:.4f} timesteps"
            )
        profiles = world.config.render_profiles
        if self.render_profile and self.render_profile not in profiles:
            raise SimNodeError(
                f"parameter render_profile: got {self.render_profile!r}, allowed: '' or one of the world's "
                f"profiles {sorted(profiles)}"
            )


PARAMS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "world": (
        "Bundled world id (e.g. tabletop-pick-v1) or path of a world folder (world.yaml + MJCF).",
        None,
    ),
    "seed": ("Variation seed of the initial reset (the reset service takes its own).", (0, 2**62)),
    "real_time": ("Pace physics to the wall clock (true) or run as fast as possible (false).", None),
    "joint_state_rate_hz": (
        "Rate (Hz, sim time) of /joint_states and /clock; at most the physics rate 1/timestep.",
        (1.0, 1000.0),
    ),
    "camera_rate_hz": (
        "Rate (Hz, sim time) of every camera's images and camera_info; 0 uses world.yaml's rate_hz.",
        (0.0, 120.0),
    ),
    "cameras_enabled": ("Render and publish the world's RGB-D cameras.", None),
    "lockstep": (
        "Advance physics one control period only after the policy acknowledged the observation.",
        None,
    ),
    "control_rate_hz": (
        "Policy control rate (Hz): the period that lockstep waits at and that the step service advances; "
        "its period must be a whole number of physics timesteps.",
        (0.1, 1000.0),
    ),
    "tf_rate_hz": ("Rate (Hz, sim time) of the dynamic /tf (the robot's moving links).", (1.0, 1000.0)),
    "publish_clock": ("Publish /clock (sim time); other nodes then run with use_sim_time:=true.", None),
    "policy_id": ("Policy id echoed in every EpisodeOutcome (free text).", None),
    "variations": (
        "Variations YAML (schema of config/variations.yaml) applied, with the reset's seed, when a reset "
        "gives an empty variation_config (and at start-up); empty: the base world.",
        None,
    ),
    "ack_timeout_s": (
        "Lockstep: wall time (s) without the policy's acknowledgement after which the node warns and, if no "
        "publisher of the heartbeat is left, ends the episode as failed with reason policy_lost (it keeps "
        "serving); 0: never.",
        (0.0, 3600.0),
    ),
    "render_profile": (
        "Render profile (world.yaml render_profiles, e.g. full or fast) every camera is drawn with; "
        "empty: each camera's declared render_profile.",
        None,
    ),
    "compressed_images": (
        "Also publish each camera's images as image_transport's compressed topics (<image>/compressed, jpeg; "
        "<depth>/compressedDepth, png), encoded only while someone subscribes.",
        None,
    ),
}


def _allowed(name: str, default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, str):
        return "a string"
    low, high = PARAMS[name][1] or (0, 0)
    if isinstance(default, int):
        return f"an integer in [{int(low)}, {int(high)}]"
    return f"a floating-point number in [{low}, {high}] (write 15.0, not 15)"


def param_error(name: str, default: Any, err: Exception) -> SimNodeError:
    """The error of parameter ``name`` (declared with ``default``): its value and the allowed values."""
    return SimNodeError(f"parameter {name}: invalid value ({err}); allowed: {_allowed(name, default)}")


def parse_variation_config(text: str) -> VariationConfig:
    """Parse and validate variation axes given as YAML text (the schema of ``config/variations.yaml``).

    Raises:
        VariationError: "variation_config: <field>: ..." naming the field at fault, or the YAML error.
    """
    return parse_variation_text(text, "variation_config")
