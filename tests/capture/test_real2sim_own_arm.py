"""real2sim on conformance arms (worlds made by `r2s2r world new`, robot files outside the world folder):
a random profile from the benchmark's ranges, the emulated capture, and an identified world that holds the
robot with its fitted values and copies of only the asset files it references.

The excitation and the optimiser are cut short to keep this fast: it checks the pipeline and the geometry
(camera, objects), not the identification's accuracy, which `bench_real2sim --world` measures.
"""

from __future__ import annotations

import importlib.util
import os

os.environ.setdefault("MUJOCO_GL", "egl")

from pathlib import Path  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from r2s2r_capture.bench import random_profile as R  # noqa: E402
from r2s2r_capture.bench import real2sim as B  # noqa: E402
from r2s2r_capture.procedures import session as C  # noqa: E402
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim  # noqa: E402
from r2s2r_capture.sysid.recording import ExcitationConfig  # noqa: E402
from r2s2r_sim.cli.main import main as r2s2r  # noqa: E402
from r2s2r_sim.hardware.profile import load_hardware_profile  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402

SHARED_ROBOTS = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "robots"
pytestmark = [
    pytest.mark.study,
    pytest.mark.skipif(not SHARED_ROBOTS.is_dir(), reason=f"conformance robots not found at {SHARED_ROBOTS}"),
]

# robot file and extra `world new` flags: two MJCF arms and a URDF (xacro) description package
ROBOTS = {
    "ufactory_xarm7": ("ufactory_xarm7/xarm7.xml", []),
    "trs_so_arm100": ("trs_so_arm100/so_arm100.xml", []),
    "ur5e_xacro": (
        "ur_description/urdf/ur.urdf.xacro",
        ["--xacro-arg", "ur_type:=ur5e", "--xacro-arg", "name:=ur5e", "--tool-body", "tool0"]
        + ["--home", "0,-1.57,1.57,-1.57,-1.57,0"],
    ),
}
EXC = ExcitationConfig(
    duration_s=4.0,
    rate_hz=500.0,
    base_freq_hz=0.25,
    n_harmonics=4,
    range_fraction=0.3,
    max_velocity=1.0,
    ramp_s=0.5,
)
CAPTURE = C.CaptureConfig(n_intrinsics_views=6, n_scene_frames=1, excitation=EXC)
CONFIG = Real2SimConfig(max_iters=3, report=False)


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    if request.param.endswith("xacro") and importlib.util.find_spec("xacro") is None:
        pytest.skip("xacro is not installed (pip install xacro)")
    root = tmp_path_factory.mktemp(request.param)
    world = root / "arm_world"
    robot, flags = ROBOTS[request.param]
    assert r2s2r(["world", "new", "--robot", str(SHARED_ROBOTS / robot), "--out", str(world), *flags]) == 0
    profile = R.random_profile(5, root / "profile.yaml", world=world)
    cap = C.capture_emulated(root / "capture", profile=profile, world=world, config=CAPTURE)
    result = real2sim([cap.bag], root / "identified", template=world, config=CONFIG)
    errors = B.compare(result, load_hardware_profile(profile), cap.truth, world)
    return {"world": world, "profile": profile, "result": result, "errors": errors}


def test_random_profile_draws_the_arms_own_parameters(run: dict) -> None:
    prof = load_hardware_profile(run["profile"])
    base = SimWorld(run["world"])
    model = base.model
    for joint in base.arm_joint_names:
        jid = model.joint(joint).id
        (act,) = [
            a
            for a in range(model.nu)
            if model.actuator_trnid[a, 0] == jid and model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
        ]
        kp = prof.physics.servos[model.actuator(act).name].kp
        assert 0.85 <= kp / model.actuator_gainprm[act, 0] <= 1.15
        assert prof.physics.joints[joint].frictionloss is not None


def test_identified_world_is_self_contained_with_the_fit(run: dict) -> None:
    result, world_dir = run["result"], run["result"].world_dir
    world = SimWorld(world_dir)
    robot = world.config.robot.mjcf
    assert robot.is_relative_to(world_dir) and robot.parent == world_dir / "robot"
    spec = mujoco.MjSpec.from_file(str(robot))
    referenced = {m.file for m in spec.meshes if m.file}
    assert referenced and {p.name for p in (robot.parent / "assets").iterdir()} == referenced
    assert world.arm_joint_names == SimWorld(run["world"]).arm_joint_names
    fitted = result.sysid["fitted"]  # the MJCF keeps six significant digits
    assert world.command_delay_s == pytest.approx(fitted["command_delay_s"], rel=1e-5)
    joint = world.arm_joint_names[0]
    dof = world.model.joint(joint).dofadr[0]
    assert world.model.dof_armature[dof] == pytest.approx(fitted[f"{joint}/armature"], rel=1e-5)
    assert world.model.dof_frictionloss[dof] == pytest.approx(fitted[f"{joint}/frictionloss"], rel=1e-5)
    # every joint keeps its fitted armature: none of the template's world.yaml settings is laid over it
    assert not {"armature", "servos", "xacro_args", "urdf"} & set(
        yaml.safe_load((world_dir / "world.yaml").read_text())["robot"]
    )
    for joint in world.arm_joint_names:
        dof = world.model.joint(joint).dofadr[0]
        assert world.model.dof_armature[dof] == pytest.approx(fitted[f"{joint}/armature"], rel=1e-5)


def test_camera_and_objects_within_targets(run: dict) -> None:
    e = run["errors"]
    assert e["camera_position_mm"] <= 5.0 and e["camera_rotation_deg"] <= 0.5, e
    assert set(e["objects"]) == {"cube", "bin"}, e["objects"]
    for body, o in e["objects"].items():
        assert o["position_mm"] <= 10.0 and o["size_mm"] <= 10.0, (body, o)
    assert np.isfinite([v["fitted"] for v in e["sysid"].values()]).all()
    assert len(e["sysid"]) == 6 * len(SimWorld(run["world"]).arm_joint_names) + 1
