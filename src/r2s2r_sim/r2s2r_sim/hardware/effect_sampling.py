"""Random sensor, arm and contact effect sections for a hardware profile, from documented ranges.

The realistic profile holds one value per effect; acceptance runs on profiles nobody tuned for draw every
effect from these ranges (the spread of public datasheets for D4xx cameras, small-pixel colour imagers,
geared arms of this size, printed parts and rubber pads):

======================  =======================================================================
depth_sensor            subpixel U(0.05, 0.12) px; baseline 50 or 55 mm (D435/D415); min range
                        U(0.15, 0.3) m; temporal share U(0.3, 0.7); edge jump U(0.02, 0.06);
                        projector offset +-U(0.015, 0.03) m
color_sensor            full well U(4000, 10000) e-; read noise U(1.5, 4) e-; exposure drift
                        U(0.03, 0.12); white balance drift U(0.01, 0.05); vignetting U(0.1, 0.35);
                        exposure U(5, 30) ms, 3 blur samples
frame_timing            stamp jitter U(0.5, 4) ms; drop probability U(0, 0.03)
arm_effects             encoder 2^12, 2^14 or 2^18 counts; physics step 1 or 0.5 ms; control 250, 500
                        or 1000 Hz; per joint (wrists in brackets): stiffness U(5e3, 2e4)
                        [U(1.5e3, 6e3)] N m/rad, motor inertia U(0.05, 0.15) [U(0.02, 0.06)] kg m^2,
                        gear damping U(0.5, 2), backlash U(0, 0.004) rad, static friction
                        U(0.3, 1.0) [U(0.08, 0.25)] N m, Coulomb x U(0.5, 0.9) of it, Stribeck
                        velocity U(0.01, 0.05) rad/s, viscous U(0.1, 0.5) [U(0.05, 0.15)],
                        torque limit 150 [28] N m
contacts                cone pyramidal or elliptic; impratio U(1, 10); pads solref time constant
                        U(0.01, 0.03) s, solimp dmin U(0.7, 0.9); cube edge radius U(1, 3) mm,
                        centre of mass offset U(-3, 3) mm per axis
======================  =======================================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from r2s2r_sim.variations.contact_config import ContactVariationConfig
from r2s2r_sim.variations.sensor_config import SensorVariationConfig

__all__ = ["random_effect_sections"]


def random_effect_sections(
    rng: np.random.Generator,
    *,
    arm_joints: Sequence[str],
    wrist_joints: Sequence[str] = (),
    pad_geoms: Sequence[str] = (),
    objects: Sequence[str] = (),
) -> dict[str, Any]:
    """Profile sections ``depth_sensor``, ``color_sensor``, ``frame_timing``, ``arm_effects``, ``contacts``.

    Args:
        rng: the only source of randomness.
        arm_joints: joints that get arm effects.
        wrist_joints: those of ``arm_joints`` that get the wrist ranges.
        pad_geoms: finger geoms that get soft contacts.
        objects: task bodies (box geoms) that get rounded edges and an offset centre of mass.
    """

    def u(lo: float, hi: float) -> float:
        return float(rng.uniform(lo, hi))

    # The sensor ranges are the sim's sensor variation axis's defaults (one documented source); the
    # baseline is one of the two cameras', not a value between them.
    s = SensorVariationConfig()
    side = 1.0 if rng.random() < 0.5 else -1.0
    sections: dict[str, Any] = {
        "depth_sensor": {
            "subpixel_px": u(*s.subpixel_px),
            "baseline_m": float(rng.choice(list(s.baseline_m))),
            "depth_unit_m": s.depth_unit_m,
            "min_range_m": u(*s.min_range_m),
            "max_range_m": s.max_range_m,
            "temporal_fraction": u(*s.temporal_fraction),
            "edge_jump": u(*s.edge_jump),
            "projector_offset_m": side * u(*s.projector_offset_m),
        },
        "color_sensor": {
            "full_well_e": u(*s.full_well_e),
            "read_noise_e": u(*s.read_noise_e),
            "exposure_drift": u(*s.exposure_drift),
            "white_balance_drift": u(*s.white_balance_drift),
            "vignetting": u(*s.vignetting),
            "exposure_s": u(0.005, 0.03),
            "motion_blur_samples": 3,
        },
        "frame_timing": {"stamp_jitter_std_s": u(0.0005, 0.004), "drop_probability": u(0.0, 0.03)},
    }
    joints = {}
    for name in arm_joints:
        wrist = name in wrist_joints
        static = u(0.08, 0.25) if wrist else u(0.3, 1.0)
        joints[name] = {
            "torque_limit": 28.0 if wrist else 150.0,
            "static_friction": static,
            "coulomb_friction": static * u(0.5, 0.9),
            "stribeck_velocity": u(0.01, 0.05),
            "viscous_friction": u(0.05, 0.15) if wrist else u(0.1, 0.5),
            "backlash": u(0.0, 0.004),
            "stiffness": u(1.5e3, 6e3) if wrist else u(5e3, 2e4),
            "motor_inertia": u(0.02, 0.06) if wrist else u(0.05, 0.15),
            "gear_damping": u(0.5, 2.0),
        }
    sections["arm_effects"] = {
        "encoder_counts_per_rev": int(rng.choice([4096, 16384, 262144])),
        "physics_timestep_s": float(rng.choice([0.001, 0.0005])),
        "control_rate_hz": float(rng.choice([250.0, 500.0, 1000.0])),
        "joints": joints,
    }
    # The pad and solver ranges are the sim's contact variation axis's defaults, as the sensor ones are.
    c = ContactVariationConfig()
    pads = {
        g: {"solref": [u(*c.solref_timeconst), 1.0], "solimp": [u(*c.solimp_dmin), 0.95, 0.002, 0.5, 2.0]}
        for g in pad_geoms
    }
    sections["contacts"] = {
        "cone": str(rng.choice(["pyramidal", "elliptic"])),
        "impratio": u(*c.impratio),
        "geoms": pads,
        "objects": {
            o: {"rounded_edge_m": u(0.001, 0.003), "com_offset_m": [u(-0.003, 0.003) for _ in range(3)]}
            for o in objects
        },
    }
    return sections
