"""``r2s2r reconstruct FRAMES.npz --template WORLD_DIR --out WORLD``: posed RGB-D frames to a world folder.

``FRAMES.npz`` holds ``rgb`` (N, H, W, 3) uint8, ``depth`` (N, H, W) metres (0 = no data), ``K`` (3, 3) and
``poses`` (N, 4, 4) ``T_world_camera`` of the optical frame.  The written world's camera is frame
``--camera-frame``'s pose (a fixed camera: any frame; a sweep: the one to simulate).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from r2s2r_sim.cli.common import bad_input, comma_vector
from r2s2r_sim.world.config import load_world_config

from r2s2r_capture.errors import ReconstructionError, refuse_existing
from r2s2r_capture.real2sim.scene_spec import CameraModel
from r2s2r_capture.real2sim.task_roles import pick_task, template_object_size
from r2s2r_capture.real2sim.world_writer import TaskSpec, write_world
from r2s2r_capture.reconstruction import scene as rc
from r2s2r_capture.reconstruction.tsdf import integrate_tsdf

__all__ = ["cmd_reconstruct", "main", "register_reconstruct"]

_NPZ_KEYS = ("rgb", "depth", "K", "poses")


def _load_frames(path: str) -> dict[str, Any]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [k for k in _NPZ_KEYS if k not in npz.files]
            if missing:
                raise ReconstructionError(f"{path}: missing arrays {missing} (need {list(_NPZ_KEYS)})")
            data = {k: np.asarray(npz[k]) for k in _NPZ_KEYS}
    except (OSError, ValueError) as err:
        raise ReconstructionError(f"{path}: not a readable .npz: {err}") from err
    rgb, depth, poses = data["rgb"], data["depth"], data["poses"]
    if rgb.ndim != 4 or depth.ndim != 3 or poses.ndim != 3 or not (len(rgb) == len(depth) == len(poses)):
        raise ReconstructionError(
            f"{path}: need rgb (N,H,W,3), depth (N,H,W), poses (N,4,4) with one N; got {rgb.shape}, "
            f"{depth.shape}, {poses.shape}"
        )
    return data


def _pick_task(
    objects: tuple, object_name: str | None, target_name: str | None, template: str
) -> tuple[str, str]:
    """The flags' names, and the rest as real2sim names them (:mod:`r2s2r_capture.real2sim.task_roles`)."""
    if len(objects) < 2:
        raise ReconstructionError(
            f"objects: found {len(objects)} object(s) on the table, need a task object and a target; "
            "record views that show both"
        )
    task = load_world_config(template).task
    like = None if task is None else template_object_size(template, task.object_body)
    auto_object, auto_target = pick_task(objects, marker=False, like=like, target=target_name)
    return object_name or auto_object, auto_target or ""


def cmd_reconstruct(ns: argparse.Namespace) -> int:
    """Fuse, segment and write the world; prints one line per object."""
    try:
        refuse_existing(ns.out, ReconstructionError)  # fail before the slow part
        t0 = time.perf_counter()
        data = _load_frames(ns.frames)
        n = len(data["rgb"])
        if not -n <= ns.camera_frame < n:
            raise ReconstructionError(f"--camera-frame: {ns.camera_frame} out of range for {n} frames")
        bounds = None
        if ns.bounds is not None:
            bounds = (ns.bounds[:3], ns.bounds[3:])
        scene = integrate_tsdf(
            list(zip(data["rgb"], data["depth"], strict=True)),
            data["K"],
            data["poses"],
            voxel=ns.voxel,
            depth_trunc=ns.depth_trunc,
            bounds=bounds,
        )
        t1 = time.perf_counter()
        keepout = None
        if ns.keepout is not None:
            keepout = rc.RobotKeepOut(center=ns.keepout, radius=ns.keepout_radius)
        else:
            attach = load_world_config(ns.template).robot.attach
            if attach.site is None:
                keepout = rc.RobotKeepOut(center=attach.pos, radius=ns.keepout_radius)
        result = rc.segment_scene(scene.point_cloud(), rc.SegmentConfig(voxel=ns.voxel, keepout=keepout))
        t2 = time.perf_counter()
        object_name, target_name = _pick_task(result.objects, ns.object, ns.target, ns.template)
        h, w = data["depth"].shape[1:]
        camera = CameraModel(K=data["K"], width=w, height=h, T_world_camera=data["poses"][ns.camera_frame])
        out = write_world(
            ns.out,
            template=ns.template,
            table=result.table,
            objects=result.objects,
            camera=camera,
            task=TaskSpec(object=object_name, target=target_name),
            world_id=ns.world_id,
        )
        t3 = time.perf_counter()
    except ReconstructionError as err:
        return bad_input("reconstruct", err)
    t = result.table
    body = _object_body(out)
    print(
        f"table: top z {t.height:.4f} m, {t.size[0]:.3f} x {t.size[1]:.3f} m, colour "
        f"{np.round(t.color, 3).tolist()}"
    )
    for o in result.objects:
        role = {object_name: f" (task object, body {body!r})", target_name: " (target)"}.get(o.name, "")
        print(
            f"{o.name}{role}: {o.primitive.value}, centre {np.round(o.position, 4).tolist()} m, size "
            f"{np.round(o.size, 4).tolist()} m, yaw {np.degrees(o.yaw):.1f} deg, colour "
            f"{np.round(o.color, 3).tolist()}, {o.n_points} points"
        )
    print(f"dropped {result.n_robot_clusters} robot and {result.n_noise_clusters} noise cluster(s)")
    print(f"TSDF {t1 - t0:.1f} s, segmentation {t2 - t1:.1f} s, world {t3 - t2:.1f} s; wrote {out}")
    return 0


def _object_body(world_dir: Path) -> str:
    return str(yaml.safe_load((world_dir / "world.yaml").read_text(encoding="utf-8"))["task"]["object_body"])


def register_reconstruct(subparsers: Any) -> None:
    """Add ``r2s2r reconstruct``."""
    p = subparsers.add_parser("reconstruct", help="posed RGB-D frames (.npz) -> world folder (TSDF, Open3D)")
    p.add_argument("frames", help=".npz with rgb (N,H,W,3), depth (N,H,W) m, K (3,3), poses (N,4,4)")
    p.add_argument("--template", required=True, help="world folder giving robot, camera names, task settings")
    p.add_argument("-o", "--out", required=True, help="world folder to write (must not exist)")
    p.add_argument("--voxel", type=float, default=0.004, help="TSDF voxel (m)")
    p.add_argument("--depth-trunc", type=float, default=3.0, help="ignore depth beyond this (m)")
    p.add_argument(
        "--bounds",
        type=comma_vector(6),
        metavar="XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX",
        default=None,
        help="world box to reconstruct (m)",
    )
    p.add_argument(
        "--keepout",
        type=comma_vector(3),
        metavar="X,Y,Z",
        default=None,
        help="robot base (m); default the template's robot.attach.pos",
    )
    p.add_argument("--keepout-radius", type=float, default=0.15, help="robot keep-out cylinder radius (m)")
    p.add_argument("--object", default=None, help="task object (default: the one most like the template's)")
    p.add_argument("--target", default=None, help="target object (default: the largest open box)")
    p.add_argument("--camera-frame", type=int, default=0, help="frame whose pose the world camera takes")
    p.add_argument("--world-id", default="reconstructed-v1", help="id of the written world")
    p.set_defaults(func=cmd_reconstruct)


def main(argv: list[str] | None = None) -> int:
    """Run ``reconstruct`` standalone (``python -m r2s2r_capture.cli.reconstruct``)."""
    parser = argparse.ArgumentParser(prog="r2s2r")
    sub = parser.add_subparsers(dest="command", required=True)
    register_reconstruct(sub)
    ns = parser.parse_args(["reconstruct", *(sys.argv[1:] if argv is None else argv)])
    return int(ns.func(ns))


if __name__ == "__main__":
    sys.exit(main())
