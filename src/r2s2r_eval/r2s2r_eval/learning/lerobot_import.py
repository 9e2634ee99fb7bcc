"""Importing ``lerobot``'s dataset modules next to the CPU build of torch the product pins.

``lerobot.datasets`` imports torchvision at module level (for ``transforms``).  The only torchvision built
for torch 2.13 on the package registries is the CUDA build: on the CPU build of torch its C++ ops cannot
load (they link ``libtorch_cuda``), which torchvision tolerates except that it registers fake kernels for
``nms`` and ``qnms`` without checking, so ``import torchvision`` raises "operator torchvision::nms does not
exist".  Declaring those two schemas first lets its pure-Python parts import; calling a torchvision C++ op
still raises.  r2s2r calls none: videos are encoded by PyAV and decoded by torchcodec.

lerobot is imported inside the functions here: it is heavy (pandas, datasets, torchvision), and only the
LeRobot paths of ``r2s2r demos`` and ``r2s2r train`` need it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from r2s2r_eval.learning.lerobot_format import DatasetError

__all__ = [
    "VIDEO_BACKEND",
    "lerobot_converter",
    "lerobot_dataset",
    "lerobot_policy",
    "lerobot_types",
    "lerobot_video_utils",
    "open_dataset",
]

# lerobot's "pyav" decoder goes through torchvision.io.VideoReader, which torchvision 0.28 no longer has.
VIDEO_BACKEND = "torchcodec"
# The ops torchvision 0.28 registers fake kernels for without checking that its C++ library loaded.
_UNGUARDED_OPS = ("nms", "qnms")
_NMS_SCHEMA = "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"


def _prepare_torchvision() -> None:
    """Make ``import torchvision`` work when its C++ ops cannot load (see the module docstring)."""
    import torch  # heavy; only the LeRobot paths need it

    # SVT-AV1 (lerobot's default encoder) logs its whole configuration per video at its default level.
    os.environ.setdefault("SVT_LOG", "1")
    # LeRobotDataset falls back to downloading "<repo id>" from the Hugging Face Hub when a local dataset
    # looks incomplete; r2s2r's datasets are local only, so a damaged one must fail here, not go online.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if "torchvision" in sys.modules:
        return
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return  # lerobot's own import then names what is missing
    libs = sorted(Path(next(iter(spec.submodule_search_locations))).glob("_C*.so"))
    try:
        if libs:
            torch.ops.load_library(str(libs[0]))
            return
    except OSError:
        pass
    for op in _UNGUARDED_OPS:
        try:
            getattr(torch.ops.torchvision, op)
        except (AttributeError, RuntimeError):
            torch.library.define(f"torchvision::{op}", _NMS_SCHEMA)


def lerobot_dataset() -> ModuleType:
    """``lerobot.datasets.lerobot_dataset`` (``LeRobotDataset``, ``CODEBASE_VERSION``)."""
    _prepare_torchvision()
    import datasets  # lerobot's dependency; its per-episode progress bars would flood a CLI's output
    import lerobot.datasets.lerobot_dataset as module  # heavy optional library, loaded when used

    datasets.disable_progress_bars()
    return module


def lerobot_video_utils() -> ModuleType:
    """``lerobot.datasets.video_utils`` (``decode_video_frames``)."""
    _prepare_torchvision()
    import lerobot.datasets.video_utils as module  # heavy optional library, loaded when used

    return module


def lerobot_converter() -> ModuleType:
    """``lerobot.datasets.v30.convert_dataset_v21_to_v30`` (``convert_dataset``)."""
    _prepare_torchvision()
    import lerobot.datasets.v30.convert_dataset_v21_to_v30 as module  # heavy optional library, when used

    return module


def lerobot_policy(learner: str) -> ModuleType:
    """Lerobot's modelling module of ``learner`` ("act": ``ACTPolicy``, "diffusion": ``DiffusionPolicy``).

    Raises:
        ValueError: another learner.
        ImportError: lerobot or a module its policies import is missing (names it and how to install it).
    """
    _prepare_torchvision()
    try:
        if learner == "act":
            import lerobot.policies.act.modeling_act as module  # heavy optional library, loaded when used
        elif learner == "diffusion":
            import lerobot.policies.diffusion.modeling_diffusion as module  # heavy optional library
        else:
            raise ValueError(f"learner: lerobot has no policy {learner!r} here (act, diffusion)")
    except ImportError as err:  # a pip install without requirements/learning*.txt
        raise ImportError(
            f"learner {learner!r} needs lerobot's policies, which import {err.name}: not installed "
            "(`make setup` installs requirements/learning.txt and learning-nodeps.txt)",
            name=err.name,
        ) from err
    return module


def lerobot_types() -> ModuleType:
    """``lerobot.configs.types`` (``FeatureType``, ``PolicyFeature``)."""
    _prepare_torchvision()
    import lerobot.configs.types as module  # heavy optional library, loaded when used

    return module


def open_dataset(root: str | Path, **kwargs: Any) -> Any:
    """The LeRobot dataset at ``root`` (local only: the repo id is the folder's name).

    Raises:
        DatasetError: LeRobotDataset cannot load it (the error names the folder and lerobot's reason).
    """
    root = Path(root)
    module = lerobot_dataset()
    try:
        return module.LeRobotDataset(f"local/{root.name}", root=root, video_backend=VIDEO_BACKEND, **kwargs)
    except Exception as err:  # lerobot, datasets and huggingface_hub raise many kinds for a bad folder
        if type(err).__name__ == "OfflineModeIsEnabled":  # lerobot's fallback to the Hub, kept offline
            reason = "its files do not hold everything meta/ lists (lerobot would fetch it from the Hub)"
        else:
            reason = f"{type(err).__name__}: {err}"
        raise DatasetError(f"{root}: LeRobotDataset cannot load it: {reason}") from err
