"""real2sim against a unit it shares no physics or renderer with: the Bullet unit (the shipped ``bullet``
profile), captured in-process with a short procedure.

The camera, the objects and the arm's dynamics are found from Bullet's images and joint states; the
world real2sim writes is MuJoCo.  The camera must come out within the capture targets, the objects within
10 mm, and the identified MuJoCo arm must track Bullet's arm on held-out motion better than the template.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from r2s2r_capture.bench import real2sim as B
from r2s2r_capture.procedures import session as C
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim
from r2s2r_capture.sysid.recording import ExcitationConfig
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import profile_path

os.environ.setdefault("MUJOCO_GL", "egl")

pytestmark = [pytest.mark.timeout(1800), pytest.mark.study]

EXC = ExcitationConfig(
    duration_s=8.0, rate_hz=500.0, base_freq_hz=0.2, n_harmonics=5, range_fraction=0.35, max_velocity=1.2,
    ramp_s=0.5,
)  # fmt: skip


def test_real2sim_finds_the_bullet_units_camera_objects_and_dynamics(tmp_path: Path) -> None:
    profile = profile_path("bullet")
    capture = C.CaptureConfig(n_intrinsics_views=8, n_scene_frames=1, excitation=EXC)
    cap = C.capture_emulated(tmp_path / "capture", profile=profile, config=capture)
    result = real2sim([cap.bag], tmp_path / "world", config=Real2SimConfig(max_iters=10, report=False))
    errors = B.compare(result, load_hardware_profile(profile), cap.truth)
    assert errors["camera_position_mm"] < 5.0, errors
    assert errors["camera_rotation_deg"] < 1.0, errors
    assert errors["objects"], f"no object matched the scene: {result.objects}"
    for body, err in errors["objects"].items():
        assert err["position_mm"] < 10.0, (body, err)
    before, after = result.sysid["rms_val_before"], result.sysid["rms_val_after"]
    assert after < before / 2, (before, after)
