"""A reconstructed world's variation defaults: what the capture could not pin down.

``r2s2r real2sim`` writes ``variations.yaml`` (the schema of ``config/variations.yaml``) into the world
folder.  Only what the capture leaves uncertain varies; an operator's changes (object poses, lighting,
clutter) are a study's own axes and stay off here:

- **dynamics**: every identified arm parameter (servo kp and kv, armature, friction loss, joint damping,
  the command delay) uniform in its fitted value +- 1.96 standard errors (a 95 % interval) of the
  identification (:mod:`r2s2r_capture.sysid.uncertainty`), clipped to the fit's search bounds; a parameter
  the data cannot see spans those bounds.  Effects the MuJoCo arm has no parameter for (joint
  compliance, backlash, velocity-dependent friction, encoder quantisation) are absorbed into these
  effective values; what they leave over is slow, correlated tracking error, which widens the errors
  through the residuals' autocorrelation time.
- **camera**: the calibrated pose +- 1.96 standard errors of the known-pose PnP (position and angle), and
  the field of view +- 1.96 standard errors of the intrinsic calibration's fy.
- **physics**: the task object's and table's friction scale, around the friction the capture's slide
  phase measured in a push world (:meth:`r2s2r_capture.real2sim.slide.SlideEstimate.variation_range`), else
  the prior :data:`FRICTION_PRIOR`; the task object's mass scale :data:`MASS_PRIOR` (a prior: no capture
  weighs the object).  Servo gains and joint
  damping are left to the dynamics axis (scale 1).
- **sensor** (documented ranges; a capture does not identify a camera's noise): the sim's camera frames
  get D4xx depth noise and holes and a colour imager's noise, exposure and white balance drawn from the
  axis's default ranges (:func:`sensor_ranges`, the spread of public datasheets).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from r2s2r_sim.variations.config import SensorVariationConfig
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.calibration.camera import IntrinsicsResult
from r2s2r_capture.real2sim.scene_spec import TABLE_GEOM
from r2s2r_capture.sysid.report import IdentificationResult
from r2s2r_capture.sysid.uncertainty import Z95, parameter_range

__all__ = [
    "FRICTION_PRIOR",
    "MASS_PRIOR",
    "sensor_ranges",
    "world_variations",
    "write_world_variations",
]

# Friction coefficients of one pair of materials spread by about +-30 % between handbook tables and with
# surface state and humidity; without a slide phase the capture sees no sliding, so it cannot narrow that.
FRICTION_PRIOR = (0.7, 1.3)
# The reconstruction gives the object's shape, not its density or mass distribution: the same +-30 %.
MASS_PRIOR = (0.7, 1.3)


def sensor_ranges() -> dict[str, Any]:
    """The ``sensor`` axis, on, with every default range written out (what the world's file documents)."""
    doc = dataclasses.asdict(SensorVariationConfig(enabled=True))
    return {k: list(v) if isinstance(v, tuple) else v for k, v in doc.items()}


def _fovy_std_deg(fy: float, height: int, std_fy: float) -> float:
    """Standard error of the vertical field of view 2 atan(h / 2 fy) (deg) from that of fy (px)."""
    x = height / (2.0 * fy)
    return math.degrees(2.0 * x / (1.0 + x * x) * std_fy / fy)


def world_variations(
    world_dir: str | Path,
    ident: IdentificationResult,
    intrinsics: IntrinsicsResult,
    camera_std: tuple[float, float],
    *,
    friction_range: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The variations document (a mapping of axes) for the reconstructed world at ``world_dir``.

    Args:
        world_dir: the written world (its robot prefix, camera and task object are read from it).
        ident: the identification, with its standard errors and the fit's search bounds.
        intrinsics: the intrinsic calibration (fy and its standard error).
        camera_std: standard errors of the camera's position (m) and angle (rad)
            (:func:`r2s2r_capture.calibration.camera.known_pose_std`).
        friction_range: the friction scale measured by the capture's slide phase
            (:meth:`r2s2r_capture.real2sim.slide.SlideEstimate.variation_range`); default the prior.
    """
    world = SimWorld(world_dir)
    cfg, model = world.config, world.model
    if cfg.task is None:
        raise ValueError(f"{world_dir}: the world has no task object to vary")
    body = model.body(cfg.task.object_body).id
    object_geoms = [model.geom(g).name for g in range(model.ngeom) if model.geom_bodyid[g] == body]
    has_table = any(model.geom(g).name == TABLE_GEOM for g in range(model.ngeom))
    parameters = []
    for name, value in ident.fitted.items():
        p = ident.toolbox["fitted"][name]
        bounds = (float(p.min_value[0]), float(p.max_value[0]))
        lo, hi = parameter_range(value, ident.std.get(name, math.inf), bounds)
        world_name = name if "/" not in name else cfg.robot.prefix + name
        parameters.append({"name": world_name, "range": [lo, hi]})
    pos_std, rot_std = camera_std
    fy, height = float(intrinsics.camera_matrix[1, 1]), int(intrinsics.image_size[1])
    return {
        "appearance": {"enabled": False},
        "objects": {"enabled": False},
        "clutter": {"enabled": False},
        "physics": {
            "enabled": True,
            "friction_scale": list(friction_range or FRICTION_PRIOR),
            "friction_geoms": [g for g in object_geoms if g] + ([TABLE_GEOM] if has_table else []),
            "mass_scale": list(MASS_PRIOR),
            "mass_bodies": [cfg.task.object_body],
            "damping_scale": [1.0, 1.0],
            "gain_scale": [1.0, 1.0],
        },
        "robot_state": {"enabled": False},
        "camera": {
            "enabled": True,
            "camera": cfg.cameras[0].mjcf_camera,
            "position_jitter": Z95 * pos_std,
            "rotation_jitter": Z95 * rot_std,
            "fovy_jitter": Z95 * _fovy_std_deg(fy, height, intrinsics.std_fx_fy_px[1]),
        },
        "dynamics": {"enabled": True, "parameters": parameters},
        "sensor": sensor_ranges(),
    }


_HEADER = """\
# Variation defaults of this reconstructed world, written by `r2s2r real2sim`: what the capture could not
# pin down (schema: config/variations.yaml).  dynamics: each identified parameter over its fitted value
# +- 1.96 standard errors of the identification (identification/sysid.yaml), clipped to the fit's bounds.
# camera: +- 1.96 standard errors of the calibration.  physics: mass a prior (+-30 %); friction +-1.96
# standard errors of the slide phase's fit where the capture has one (a push world), else a prior (+-30 %).
# sensor: a camera's noise is not identified, so the sim's frames get D4xx depth and colour-imager effects
# drawn from documented ranges (docs/concepts/variations.md).  An operator's changes (object poses, lighting,
# clutter) are a study's axes.
"""


def write_world_variations(path: str | Path, doc: Mapping[str, Any]) -> Path:
    """Write ``doc`` as a variations YAML with a header saying where each range comes from."""
    path = Path(path)
    path.write_text(_HEADER + yaml.safe_dump(dict(doc), sort_keys=False), encoding="utf-8")
    return path
