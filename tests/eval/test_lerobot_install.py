"""The lerobot modules r2s2r uses work with the torch the product pins (lerobot itself asks for torch<2.11).

requirements/learning-nodeps.txt installs lerobot without its dependencies; this proves the parts used
(``LeRobotDataset.create``/``add_frame``/``save_episode``/``finalize``, loading, video encode and decode)
work on this install, values included.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="LeRobot datasets need PyTorch (torch==2.13.0 CPU)")

from r2s2r_eval.learning.lerobot_import import lerobot_dataset, open_dataset  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _pin(name: str) -> str:
    for line in (REPO / "requirements/constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.lower().startswith(f"{name}=="):
            return line.split("==")[1]
    raise AssertionError(f"{name} is not pinned in requirements/constraints.txt")


def test_installed_versions_are_the_pinned_ones() -> None:
    assert torch.__version__ == _pin("torch")
    nodeps = (REPO / "requirements/learning-nodeps.txt").read_text(encoding="utf-8")
    assert f"lerobot=={version('lerobot')}" in nodeps
    assert f"torchcodec=={version('torchcodec')}" in nodeps
    for name in ("datasets", "av", "pandas", "torchvision", "huggingface-hub"):
        assert version(name) == _pin(name), name
    assert lerobot_dataset().CODEBASE_VERSION == "v3.0"


def test_create_save_finalize_and_load_round_trip(tmp_path: Path) -> None:
    module = lerobot_dataset()
    features = {
        "observation.image": {"dtype": "video", "shape": (32, 48, 3), "names": ["height", "width", "rgb"]},
        "observation.state": {"dtype": "float32", "shape": (3,), "names": ["a", "b", "c"]},
        "action": {"dtype": "float32", "shape": (2,), "names": ["x", "y"]},
    }
    root = tmp_path / "ds"
    ds = module.LeRobotDataset.create("local/ds", fps=10, features=features, root=root, use_videos=True)
    for ep in range(2):
        for i in range(5):
            ds.add_frame(
                {
                    "observation.image": np.full((32, 48, 3), 40 * i + 10 * ep, np.uint8),
                    "observation.state": np.array([ep, i, -i], np.float32),
                    "action": np.array([i + 0.5, ep - 0.25], np.float32),
                    "task": "pick",
                }
            )
        ds.save_episode()
    ds.finalize()

    back = open_dataset(root)
    assert back.meta.info["codebase_version"] == "v3.0"
    assert back.num_episodes == 2 and len(back) == 10
    item = back[7]  # episode 1, frame 2
    assert int(item["episode_index"]) == 1 and int(item["frame_index"]) == 2
    np.testing.assert_array_equal(item["observation.state"].numpy(), [1, 2, -2])
    np.testing.assert_array_equal(item["action"].numpy(), [2.5, 0.75])
    image = item["observation.image"]
    assert tuple(image.shape) == (3, 32, 48)
    # A flat grey frame survives lossy video coding to within a few levels.
    assert abs(float(image.mean()) * 255 - 90) < 4
    assert item["task"] == "pick"
