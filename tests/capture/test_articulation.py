"""real2sim on the drawer world: the drawer joint's axis, range, damping and friction from an emulated bag.

Two emulated units: the default (realistic) profile, and the same unit with another cabinet (turned
5 deg, lighter drawer, half the damping and friction).  Small captures (6 board views, 4 s excitation, 5
optimiser iterations); the articulation phase is the documented one.  Everything real2sim uses comes from
the bag; the emulator's truth (``CaptureSummary.truth``) is only compared against.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import dataclasses  # noqa: E402
import math  # noqa: E402
from pathlib import Path  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from r2s2r_capture.errors import IdentificationError  # noqa: E402
from r2s2r_capture.procedures.session import CaptureConfig, capture_emulated  # noqa: E402
from r2s2r_capture.real2sim.articulation import estimate_articulation  # noqa: E402
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim  # noqa: E402
from r2s2r_sim.hardware.shipped_profiles import profile_path  # noqa: E402
from r2s2r_sim.variations import load_variation_config  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402

pytestmark = [
    pytest.mark.timeout(1800),
    pytest.mark.study,
]  # a capture and an identification per profile (minutes of CPU)

WORLD = "tabletop-drawer-v1"
SMALL = CaptureConfig(
    n_intrinsics_views=6,
    n_scene_frames=1,
    excitation=dataclasses.replace(
        CaptureConfig().excitation, duration_s=4.0, n_harmonics=5, max_velocity=1.2
    ),
)
CONFIG = Real2SimConfig(max_iters=5, report=False)
# The other unit's cabinet: (damping N s/m, friction loss N, yaw rad, drawer mass kg).
OTHER = (5.0, 1.0, 0.09, 0.6)


def _other_profile(path: Path) -> Path:
    doc = yaml.safe_load(profile_path().read_text(encoding="utf-8"))
    damping, friction, yaw, mass = OTHER
    over = doc["worlds"][WORLD]
    over["physics.joints.drawer_slide"] = {"damping": damping, "armature": 0.04, "frictionloss": friction}
    over["physics.body_masses_kg"] = {"drawer": mass}
    over["objects"]["cabinet"]["pose"] = {"position": [0.356, -0.056, 0.75], "rpy": [0.0, 0.0, yaw]}
    doc["name"] = "arm6-bench-unit-other-cabinet"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["realistic", "other-cabinet"])
def run(request, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp(f"drawer-{request.param}")
    profile = profile_path() if request.param == "realistic" else _other_profile(root / "profile.yaml")
    cap = capture_emulated(root / "capture", profile=profile, world=WORLD, config=SMALL)
    res = real2sim([cap.bag], root / "world", template=WORLD, config=CONFIG)
    summary = yaml.safe_load((res.world_dir / "real2sim.yaml").read_text(encoding="utf-8"))
    return {
        "truth": cap.truth["articulation"],
        "est": summary["articulation"],
        "world": res.world_dir,
        "bag": cap.bag,
    }


def test_joint_axis_range_damping_friction_recovered(run: dict) -> None:
    truth, est = run["truth"], run["est"]
    angle = math.degrees(math.acos(float(np.clip(np.dot(truth["axis"], est["axis"]), -1.0, 1.0))))
    assert angle < 5.0, f"axis {est['axis']} vs {truth['axis']}: {angle:.2f} deg"
    # The tool-down arm reaches ~0.155 m of the 0.17 m travel: the stop is out of reach, so the range
    # seen is what the pull opened, and the written range keeps the template's end.
    assert abs(est["range_seen"] - truth["opened_to"]) < 0.01, (est["range_seen"], truth["opened_to"])
    assert est["stop_hit"] is False
    assert est["range"][1] >= est["range_seen"]
    # Measured: damping within 3 %, friction loss within 2 % on these units; the margins are for other seeds.
    assert abs(est["damping"] - truth["damping"]) < 0.15 * truth["damping"], (est, truth)
    assert abs(est["frictionloss"] - truth["frictionloss"]) < 0.1 * truth["frictionloss"], (est, truth)
    assert 0 < est["damping_std"] < est["damping"] and 0 < est["frictionloss_std"] < est["frictionloss"]


def test_world_carries_the_joint_and_its_variations(run: dict) -> None:
    est, world_dir = run["est"], Path(run["world"])
    world = SimWorld(world_dir)
    model = world.model
    j = model.joint(est["joint"])
    body = int(model.jnt_bodyid[j.id])
    axis_world = world.data.xmat[body].reshape(3, 3) @ model.jnt_axis[j.id]
    np.testing.assert_allclose(axis_world, est["axis"], atol=1e-5)  # scene.xml: 6 digits
    # The cabinet stands where the template has it, turned about its closed handle: within the units'
    # offsets (4 and 10 mm) of the emulator's handle.
    data = mujoco.MjData(model)  # the joint at 0: closed
    mujoco.mj_kinematics(model, data)
    handle = data.site_xpos[model.site(world.config.task.target_site).id]
    assert np.linalg.norm(handle - run["truth"]["closed_handle"]) < 0.015, (handle, run["truth"])
    np.testing.assert_allclose(model.jnt_range[j.id], est["range"], atol=1e-6)
    assert model.dof_damping[model.jnt_dofadr[j.id]] == pytest.approx(est["damping"], rel=1e-5)
    assert model.dof_frictionloss[model.jnt_dofadr[j.id]] == pytest.approx(est["frictionloss"], rel=1e-5)
    params = {
        p.name: p.range for p in load_variation_config(world_dir / "variations.yaml").dynamics.parameters
    }
    for kind in ("damping", "frictionloss"):
        lo, hi = params[f"{est['joint']}/{kind}"]
        assert lo < run["truth"][kind] < hi, (kind, lo, hi, run["truth"][kind])  # the sim spans the unit
        assert hi - est[kind] == pytest.approx(1.96 * est[f"{kind}_std"], rel=1e-6)  # the fit's 95 % interval


def test_capture_without_articulation_phase_is_refused(tmp_path: Path) -> None:
    from r2s2r_capture.sysid.recording import ExcitationConfig

    tiny = CaptureConfig(
        n_intrinsics_views=0,
        n_scene_frames=0,
        known_board_poses=(),
        excitation=ExcitationConfig(
            duration_s=1.0, rate_hz=100.0, n_harmonics=2, max_velocity=0.5, ramp_s=0.2
        ),
    )
    cap = capture_emulated(tmp_path / "pick", profile=profile_path(), world="tabletop-pick-v1", config=tiny)
    with pytest.raises(IdentificationError, match="no articulation phase"):
        estimate_articulation(
            [cap.bag], world_path(WORLD), K=np.eye(3), D=np.zeros(5), T_world_camera=np.eye(4)
        )


def test_reference_policy_opens_the_reconstructed_drawer(run: dict) -> None:
    # The drawer policy plans its pull along the world's joint axis: the reconstructed joint must carry it.
    from r2s2r_eval.episodes.runner import EpisodeRunner
    from r2s2r_eval.policies.drawer import DrawerPolicy

    with EpisodeRunner(run["world"]) as runner:
        result = runner.run(DrawerPolicy(), 0)
    assert result.reason == "success", (result.reason, result.metrics)
