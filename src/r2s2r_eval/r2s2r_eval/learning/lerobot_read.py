"""Reading a LeRobot v3.0 dataset through ``LeRobotDataset`` as the arrays behaviour cloning trains on.

Any v3.0 dataset whose features map onto the bc policy's inputs is read, not only ``r2s2r demos``' own:

- the image: ``observation.images.camera``, else the dataset's only camera feature (video or image),
  ``H x W x 3``;
- the joint state: ``observation.state``, a vector with a name per joint;
- the action: ``action``, the arm joint targets named as joints of the state, then the gripper command
  last (the bc policy's output);
- optionally the privileged ``observation.environment_state`` (the auxiliary loss).

A feature that does not map is refused by name.  A v2.1 dataset is refused with the command that converts
it with lerobot's own converter (:mod:`r2s2r_eval.learning.lerobot_convert`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r_eval.learning.lerobot_format import DatasetError, read_info
from r2s2r_eval.learning.lerobot_import import VIDEO_BACKEND, lerobot_video_utils, open_dataset
from r2s2r_eval.learning.lerobot_v3 import CODEBASE_VERSION

__all__ = ["IMAGE_KEY", "ENV_KEY", "BCFeatures", "bc_features", "convert_command", "read_episodes"]

IMAGE_KEY = "observation.images.camera"
ENV_KEY = "observation.environment_state"
STATE_KEY = "observation.state"
ACTION_KEY = "action"


@dataclass(frozen=True, kw_only=True)
class BCFeatures:
    """Which features of a dataset are the bc policy's image, state and action, and what they hold."""

    image: str
    image_shape: tuple[int, int, int]
    joint_names: tuple[str, ...]
    arm_names: tuple[str, ...]
    env: str | None
    fps: float


def convert_command(root: str | Path) -> str:
    """The command that converts the v2.1 dataset at ``root`` to v3.0 in place (lerobot's converter)."""
    return f"python -m r2s2r_eval.learning.lerobot_convert {root}"


def _names(root: Path, key: str, spec: Mapping[str, Any]) -> tuple[str, ...]:
    shape = list(spec.get("shape", ()))
    if spec.get("dtype") not in ("float32", "float64") or len(shape) != 1:
        raise DatasetError(
            f"{root}/meta/info.json: feature {key!r}: the bc policy needs a float vector, got dtype "
            f"{spec.get('dtype')!r} shape {shape}"
        )
    names = spec.get("names")
    if isinstance(names, dict):  # some LeRobot datasets nest them: {"motors": [...]}
        names = next(iter(names.values()), None) if len(names) == 1 else None
    if not isinstance(names, list) or len(names) != shape[0] or not all(isinstance(n, str) for n in names):
        raise DatasetError(
            f"{root}/meta/info.json: feature {key!r}: needs one name per element ({shape[0]}), got {names!r}"
        )
    return tuple(names)


def _image_key(root: Path, features: Mapping[str, Mapping[str, Any]]) -> str:
    cameras = sorted(k for k, v in features.items() if v.get("dtype") in ("video", "image"))
    if IMAGE_KEY in cameras:
        return IMAGE_KEY
    if len(cameras) != 1:
        raise DatasetError(
            f"{root}/meta/info.json: feature {IMAGE_KEY!r} missing and no single camera to use instead "
            f"(camera features: {cameras}); the bc policy reads one RGB image"
        )
    return cameras[0]


def bc_features(root: str | Path) -> BCFeatures:
    """Map the features of the dataset at ``root`` onto the bc policy's inputs.

    Raises:
        DatasetError: not a v3.0 dataset (a v2.1 one: with the command converting it), or a feature the
            bc policy cannot use (named).
    """
    root = Path(root)
    info = read_info(root)
    version = info.get("codebase_version")
    if version == "v2.1":
        raise DatasetError(
            f"{root}: a LeRobot v2.1 dataset; r2s2r train reads v3.0. Convert it in place with lerobot's "
            f"converter (lerobot.datasets.v30.convert_dataset_v21_to_v30): {convert_command(root)}"
        )
    if version != CODEBASE_VERSION:
        raise DatasetError(f"{root}/meta/info.json: codebase_version {version!r}, want {CODEBASE_VERSION!r}")
    features = info.get("features")
    if not isinstance(features, dict):
        raise DatasetError(f"{root}/meta/info.json: features missing")
    for key in (STATE_KEY, ACTION_KEY):
        if key not in features:
            raise DatasetError(f"{root}/meta/info.json: feature {key!r} missing; the bc policy needs it")
    image = _image_key(root, features)
    shape = tuple(int(x) for x in features[image].get("shape", ()))
    if len(shape) != 3 or shape[2] != 3:
        raise DatasetError(f"{root}/meta/info.json: feature {image!r}: want an H x W x 3 image, got {shape}")
    joint_names = _names(root, STATE_KEY, features[STATE_KEY])
    action_names = _names(root, ACTION_KEY, features[ACTION_KEY])
    arm_names = action_names[:-1]
    unknown = [n for n in arm_names if n not in joint_names]
    if not arm_names or unknown:
        raise DatasetError(
            f"{root}/meta/info.json: feature {ACTION_KEY!r}: the bc policy reads arm joint targets named as "
            f"joints of {STATE_KEY!r} then the gripper last; {list(unknown) or list(action_names)} are not "
            f"joints of {STATE_KEY!r} {list(joint_names)}"
        )
    env = ENV_KEY if ENV_KEY in features else None
    return BCFeatures(
        image=image,
        image_shape=(shape[0], shape[1], shape[2]),
        joint_names=joint_names,
        arm_names=arm_names,
        env=env,
        fps=float(info["fps"]),
    )


def _frames(ds: Any, key: str, episode: int, rows: np.ndarray, timestamps: np.ndarray) -> np.ndarray:
    """An episode's frames of camera ``key`` as T x H x W x 3 uint8."""
    import torch  # heavy; only the LeRobot paths need it

    if key in ds.meta.video_keys:
        meta = ds.meta.episodes[episode]
        path = ds.root / ds.meta.get_video_file_path(episode, key)
        start = float(meta[f"videos/{key}/from_timestamp"])
        decoded = lerobot_video_utils().decode_video_frames(
            path, [start + float(t) for t in timestamps], ds.tolerance_s, VIDEO_BACKEND
        )
    else:  # an image feature: LeRobotDataset decodes each frame's PNG
        decoded = torch.stack([ds[int(r)][key] for r in rows])
    return (decoded.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()


def read_episodes(root: str | Path, feats: BCFeatures) -> Iterator[dict[str, np.ndarray]]:
    """Each episode of the dataset at ``root``, in order, as arrays keyed by feature name.

    The mapped camera comes as :data:`IMAGE_KEY` (T x H x W x 3 uint8) whatever its name in the dataset;
    state, action and environment state as float32; ``timestamp`` is the time since the episode started (s).
    """
    ds = open_dataset(root)
    table = ds.hf_dataset.with_format("numpy")
    columns = [STATE_KEY, ACTION_KEY, "timestamp", "frame_index", "episode_index"]
    columns += [feats.env] if feats.env else []
    data = {k: np.asarray(table[k]) for k in columns}
    for episode in range(ds.num_episodes):
        rows = np.flatnonzero(data["episode_index"] == episode)
        rows = rows[np.argsort(data["frame_index"][rows], kind="stable")]
        if len(rows) == 0:
            continue
        out = {k: np.stack(data[k][rows]).astype(np.float32) for k in (STATE_KEY, ACTION_KEY)}
        out["timestamp"] = data["timestamp"][rows].astype(np.float32).reshape(-1)
        if feats.env:
            out[feats.env] = np.stack(data[feats.env][rows]).astype(np.float32)
        out[IMAGE_KEY] = _frames(ds, feats.image, episode, rows, out["timestamp"])
        if out[IMAGE_KEY].shape[1:] != feats.image_shape:
            raise DatasetError(
                f"{root}: episode {episode}: feature {feats.image!r} decodes as {out[IMAGE_KEY].shape[1:]}, "
                f"meta/info.json says {feats.image_shape}"
            )
        yield out
