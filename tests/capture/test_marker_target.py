"""A taped target (no depth) is placed where its colour lies, on a scan of the emulated push cell.

The realistic profile's unit has the push world's target disc taped 1.5 cm away from the bundled world's
place, and its camera adds D435 depth noise and holes, colour noise, vignetting and lens distortion.  The
scan frames are fused and segmented as ``r2s2r real2sim`` does, with the profile's true camera (the
calibration stages are tested elsewhere).
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

from pathlib import Path  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from r2s2r_capture.real2sim.frames import depth_m, undistort  # noqa: E402
from r2s2r_capture.real2sim.scene_spec import CameraModel  # noqa: E402
from r2s2r_capture.real2sim.world_writer import TaskSpec, measure_marker, write_world  # noqa: E402
from r2s2r_capture.reconstruction import scene as rc  # noqa: E402
from r2s2r_capture.reconstruction.tsdf import integrate_tsdf  # noqa: E402
from r2s2r_sim.cells.emulated_cell import EmulatedCell  # noqa: E402
from r2s2r_sim.hardware.shipped_profiles import profile_path  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import WORLDS  # noqa: E402

PUSH = WORLDS["tabletop-push-v1"]
TEMPLATE_XY = np.array([0.44, 0.15])  # the bundled world's target_center


@pytest.fixture(scope="module")
def scan() -> dict:
    with EmulatedCell("tabletop-push-v1", profile_path("realistic")) as cell:
        cell.reset(0)
        raw = []
        for _ in range(3):  # a few frames: the depth noise's temporal part averages out in the TSDF
            rgb, depth = cell.render()
            raw.append((rgb, depth_m(depth)))
            cell.advance(10)
        pos, quat = cell.camera_pose()
        T = np.eye(4)
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, quat)
        T[:3, :3], T[:3, 3] = R.reshape(3, 3), pos
        K, D = cell.camera_k, cell.profile.camera.distortion.d()
        truth = cell.world.data.site_xpos[cell.world.model.site("target_center").id][:2].copy()
        base = cell.world.base_pose()[0]
    frames = undistort(raw, K, D)
    cloud = integrate_tsdf(frames, K, [T] * len(frames), voxel=0.004).point_cloud()
    seg = rc.segment_scene(cloud, rc.SegmentConfig(keepout=rc.RobotKeepOut(center=tuple(base))))
    return {"cloud": cloud, "seg": seg, "truth": truth, "K": K, "T": T, "size": raw[0][0].shape[1::-1]}


def test_marker_is_found_by_its_colour_where_it_is_taped(scan: dict) -> None:
    truth = scan["truth"]
    assert np.linalg.norm(truth - TEMPLATE_XY) > 0.012  # the unit's tape is not where the template has it
    xy = measure_marker(PUSH, "target_center", scan["cloud"], scan["seg"].table)
    assert xy is not None
    assert np.linalg.norm(np.asarray(xy) - truth) < 0.01, (xy, truth)
    # The pick world's target is a solid bin, no marker: nothing to measure by colour.
    assert measure_marker(WORLDS["tabletop-pick-v1"], "bin_center", scan["cloud"], scan["seg"].table) is None


def test_written_world_has_its_target_at_the_marker(scan: dict, tmp_path: Path) -> None:
    seg = scan["seg"]
    puck = min(seg.objects, key=lambda o: o.volume)
    xy = measure_marker(PUSH, "target_center", scan["cloud"], seg.table)
    assert xy is not None
    w, h = scan["size"]
    out = write_world(
        tmp_path / "push",
        template=PUSH,
        table=seg.table,
        objects=(puck,),
        camera=CameraModel(K=scan["K"], width=w, height=h, T_world_camera=scan["T"]),
        task=TaskSpec(object=puck.name, target=None, target_xy=xy),
    )
    site = SimWorld(out).site_pose("target_center")[0]
    assert np.linalg.norm(site[:2] - scan["truth"]) < 0.01
    assert site[2] == pytest.approx(0.77, abs=1e-5)  # the template's site height is kept


def test_a_scan_without_the_marker_colour_finds_none(scan: dict) -> None:
    # A marker of another hue (blue tape) is not in this scan.
    assert rc.find_marker(scan["cloud"], scan["seg"].table, (0.1, 0.2, 0.9), radius=0.05) is None
