"""Tiny end-to-end path: expert demos -> LeRobot dataset (validated) -> BC training -> one episode."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="BC training needs PyTorch (torch==2.13.0 CPU)")
pytest.importorskip("imageio_ffmpeg", reason="MP4 encoding needs imageio-ffmpeg")

from r2s2r_eval.episodes.runner import EpisodeRunner  # noqa: E402
from r2s2r_eval.learning.demos import DemoConfig, DemoError, attempt_seed, collect_demos  # noqa: E402
from r2s2r_eval.learning.lerobot_format import read_info  # noqa: E402
from r2s2r_eval.learning.lerobot_read import IMAGE_KEY, bc_features, read_episodes  # noqa: E402
from r2s2r_eval.learning.lerobot_v3 import EPISODES_FILE, validate_v3_dataset  # noqa: E402
from r2s2r_eval.learning.train import TRAIN_STATE, TrainConfig, TrainError, train  # noqa: E402
from r2s2r_eval.learning.train_data import TrainData  # noqa: E402
from r2s2r_eval.policies.bc.config import CHECKPOINT_CONFIG  # noqa: E402
from r2s2r_eval.policy import PolicyError, available_policies, load_policy  # noqa: E402
from resume_check import assert_resumes_to_the_same_network  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
VARIATIONS = REPO / "config/variations.yaml"


def read_episode(root: Path, index: int) -> dict[str, np.ndarray]:
    """Episode ``index`` of a v3.0 dataset as the bc training reads it."""
    return list(read_episodes(root, bc_features(root)))[index]


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demos") / "ds"
    summary = collect_demos(root, DemoConfig(variations=VARIATIONS, episodes=2, seed=0))
    assert summary.episodes == 2 and summary.new_episodes == 2
    return root


@pytest.fixture(scope="module")
def checkpoint(demos: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ckpt") / "bc"
    s = train([demos], out, TrainConfig(steps=5, batch_size=8, seed=0))
    assert s.frames > 0 and s.out == out
    return out


def test_dataset_is_valid_lerobot(demos: Path) -> None:
    assert validate_v3_dataset(demos) == []
    info = read_info(demos)
    assert info["codebase_version"] == "v3.0"
    feats = info["features"]
    assert feats["observation.images.camera"]["shape"] == [72, 96, 3]
    assert feats["action"]["names"][-1] == "gripper"
    assert "variation.unit" in feats
    assert feats["observation.environment_state"]["names"][:3] == ["object_x", "object_y", "object_z"]
    ep = read_episode(demos, 0)
    assert ep[IMAGE_KEY].shape[0] == len(ep["action"]) == len(ep["observation.state"])
    meta = [json.loads(line) for line in (demos / EPISODES_FILE).read_text().splitlines()]
    assert all(m["variation"] and m["seed"] == attempt_seed(0, m["attempt"]) for m in meta)
    bags = sorted((demos / "mcap").iterdir())
    assert [b.name for b in bags] == ["episode_000000", "episode_000001"]
    assert all((b / "metadata.yaml").is_file() for b in bags)


def test_environment_state_is_the_cube_pose(demos: Path) -> None:
    # The first frame's object state is the cube where the world's reset put it (same attempt seed).
    meta = json.loads((demos / EPISODES_FILE).read_text().splitlines()[0])
    env = read_episode(demos, 0)["observation.environment_state"]
    from r2s2r_sim.variations import load_variation_config, sample_variation

    with EpisodeRunner(
        "tabletop-pick-v1", variation=sample_variation(load_variation_config(VARIATIONS), meta["seed"])
    ) as r:
        r.world.reset(seed=meta["seed"])
        pos, quat = r.world.body_pose("cube")
    assert env[0, :3] == pytest.approx(pos, abs=2e-3)
    assert np.hypot(env[:, 3], env[:, 4]) == pytest.approx(np.ones(len(env)), abs=1e-4)
    # the cube ends up carried: it rises during the episode
    assert env[:, 2].max() > env[0, 2] + 0.05


def test_chunked_targets_stay_in_their_episode() -> None:
    from r2s2r_eval.learning.train import TrainData

    t = np.arange(10, dtype=np.float32)[:, None]
    d = TrainData(
        images=np.zeros((10, 2, 2, 3), np.uint8),
        states=np.zeros((10, 1), np.float32),
        targets=t,
        env=None,
        episode=np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2]),
        joint_names=("a",),
        arm_names=("a",),
        fps=10.0,
    )
    c = d.chunked_targets(3)
    assert c.shape == (10, 3)
    assert c[0].tolist() == [0, 1, 2] and c[2].tolist() == [2, 3, 3] and c[3].tolist() == [3, 3, 3]
    assert c[5].tolist() == [5, 6, 6] and c[9].tolist() == [9, 9, 9]
    assert d.chunked_targets(1) is t


def test_demos_resume_skips_finished_attempts(demos: Path) -> None:
    again = collect_demos(demos, DemoConfig(variations=VARIATIONS, episodes=2, seed=0))
    assert again.new_episodes == 0 and again.episodes == 2


def test_demo_config_is_validated() -> None:
    with pytest.raises(DemoError, match="max_attempts must be >= episodes"):
        DemoConfig(episodes=5, max_attempts=2)
    with pytest.raises(DemoError, match="image_width: must be an even number"):
        DemoConfig(image_width=95)
    with pytest.raises(DemoError, match="action_noise: must be in"):
        DemoConfig(action_noise=-0.1)


def test_dart_noise_moves_the_arm_but_not_the_labels(tmp_path: Path) -> None:
    # The reference expert follows its own plan, so with noise on the executed arm targets the recorded
    # states leave its path while the labels stay the plan's targets.  (The privileged expert's labels
    # follow the state by design; see test_demo_expert.py.)
    clean, noisy = tmp_path / "clean", tmp_path / "dart"
    common = {"variations": VARIATIONS, "episodes": 1, "seed": 0, "mcap": False, "expert_kind": "reference"}
    collect_demos(clean, DemoConfig(**common))
    collect_demos(noisy, DemoConfig(**common, action_noise=0.05))
    clean_ep, noisy_ep = read_episode(clean, 0), read_episode(noisy, 0)
    n = min(len(clean_ep["action"]), len(noisy_ep["action"]))
    state_gap = abs(noisy_ep["observation.state"][:n, :6] - clean_ep["observation.state"][:n, :6]).max()
    assert state_gap > 0.01
    # labels: still the expert's targets, so they track the state far less than the executed noise would
    label_gap = abs(noisy_ep["action"][:n, :6] - clean_ep["action"][:n, :6]).max()
    assert label_gap < state_gap


def test_push_demonstrations_by_the_tasks_own_expert(tmp_path: Path) -> None:
    # The push policy steers by the object it sees at every step, so its demonstrations need the camera's
    # rate (a pick expert looks once): with one frame per episode every attempt timed out.
    from r2s2r_eval.studies.task_studies import task_study

    study = task_study("push")
    cfg = DemoConfig(
        world=study.world,
        variations=study.variations,
        episodes=1,
        max_attempts=3,
        seed=0,
        mcap=False,
        expert_kind="reference",
        expert_policy=study.family[0].name,
    )
    summary = collect_demos(tmp_path / "push", cfg)
    assert summary.episodes == 1
    attempts = (tmp_path / "push/meta/r2s2r_attempts.jsonl").read_text().splitlines()
    assert json.loads(attempts[-1])["success"] is True


def test_failed_first_attempt_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A dataset whose first attempt fails has no meta/ folder yet; the attempt log must still be written.
    import r2s2r_eval.learning.demos as demos_module
    from r2s2r_eval.learning.demo_expert import PrivilegedExpert

    class Failing(PrivilegedExpert):
        def act(self, observation):
            raise PolicyError("expert gives up")

    monkeypatch.setattr(demos_module, "privileged_expert", lambda world, **kw: Failing(world, **kw))
    out = tmp_path / "ds"
    with pytest.raises(DemoError, match="no successful episode of the privileged expert"):
        collect_demos(out, DemoConfig(episodes=1, max_attempts=1, seed=0, mcap=False))
    lines = (out / "meta/r2s2r_attempts.jsonl").read_text().splitlines()
    assert len(lines) == 1 and '"success": false' in lines[0]


def test_bc_policy_is_registered_and_runs_an_episode(checkpoint: Path) -> None:
    assert "bc" in available_policies()
    cfg = json.loads((checkpoint / "config.json").read_text())
    assert cfg["policy"] == "bc" and cfg["model"]["image_width"] == 96
    policy = load_policy("bc", {"checkpoint": str(checkpoint)})
    with EpisodeRunner("tabletop-pick-v1") as runner:
        result = runner.run(policy, seed=3, camera_rate_hz=10.0, max_steps=5)
    assert result.steps == 5 and not result.reason.startswith("policy_error"), result.reason


def test_bc_policy_on_emulated_hardware(checkpoint: Path) -> None:
    from r2s2r_sim.cells.emulated_cell import EmulatedCell

    policy = load_policy("bc", {"checkpoint": str(checkpoint)})
    cell = EmulatedCell("tabletop-pick-v1", REPO / "config/emulated_hardware/ideal_profile.yaml")
    with EpisodeRunner(cell) as r:
        result = r.run(policy, seed=3, camera_rate_hz=10.0, max_steps=3)
    assert result.steps == 3 and not result.reason.startswith("policy_error"), result.reason


def test_chunked_aux_checkpoint_runs_with_temporal_ensembling(demos: Path, tmp_path: Path) -> None:
    out = tmp_path / "chunked"
    train([demos], out, TrainConfig(steps=3, batch_size=8, chunk=4, aux_weight=1.0))
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model"]["chunk"] == 4 and cfg["model"]["aux_dim"] == 5
    policy = load_policy("bc", {"checkpoint": str(out), "ensemble_decay": 0.5})
    with EpisodeRunner("tabletop-pick-v1") as runner:
        result = runner.run(policy, seed=3, camera_rate_hz=10.0, max_steps=6)
    assert result.steps == 6 and not result.reason.startswith("policy_error"), result.reason
    assert len(policy._chunks) == 4  # the last four steps' chunks were averaged


def test_aux_loss_needs_environment_state(demos: Path, tmp_path: Path) -> None:
    # A dataset recorded before observation.environment_state existed: refused with aux, fine without.
    import shutil

    old = tmp_path / "old"
    shutil.copytree(demos, old)
    info = json.loads((old / "meta/info.json").read_text())
    del info["features"]["observation.environment_state"]
    (old / "meta/info.json").write_text(json.dumps(info))
    import pyarrow.parquet as pq

    for f in (old / "data").rglob("*.parquet"):
        pq.write_table(pq.read_table(f).drop(["observation.environment_state"]), f)
    with pytest.raises(TrainError, match="observation.environment_state"):
        train([old], tmp_path / "a", TrainConfig(steps=1, batch_size=4))
    train([old], tmp_path / "b", TrainConfig(steps=1, batch_size=4, aux_weight=0.0))
    assert json.loads((tmp_path / "b/config.json").read_text())["model"]["aux_dim"] == 0


def test_training_is_deterministic_and_refuses_overwrite(
    demos: Path, checkpoint: Path, tmp_path: Path
) -> None:
    import torch

    other = tmp_path / "bc2"
    train([demos], other, TrainConfig(steps=5, batch_size=8, seed=0))
    a = torch.load(checkpoint / "policy.pt", weights_only=True)
    b = torch.load(other / "policy.pt", weights_only=True)
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(TrainError, match="exists already, not overwriting"):
        train([demos], other, TrainConfig(steps=5))


def test_bc_policy_needs_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="'checkpoint'.*is required"):
        load_policy("bc")
    with pytest.raises(PolicyError, match="policy.pt missing|config.json missing"):
        load_policy("bc", {"checkpoint": str(tmp_path)})


def test_clis_run(demos: Path, tmp_path: Path) -> None:
    from r2s2r_eval.cli import demos as demos_cli
    from r2s2r_eval.cli import train as train_cli

    assert demos_cli.main(["--out", str(demos), "--variations", str(VARIATIONS), "-n", "2", "--quiet"]) == 0
    assert demos_cli.main(["--out", str(tmp_path / "x"), "-n", "0", "--quiet"]) == 2
    out = tmp_path / "ck"
    assert train_cli.main(["--dataset", str(demos), "--out", str(out), "--steps", "2", "--quiet"]) == 0
    assert (out / "policy.pt").is_file()
    assert train_cli.main(["--dataset", str(demos), "--out", str(out), "--steps", "2", "--quiet"]) == 2


def test_training_adds_perception_frames_to_the_object_head(demos: Path, tmp_path: Path) -> None:
    from r2s2r_eval.learning.perception_frames import PerceptionFramesConfig, collect_perception_frames

    pf = collect_perception_frames(tmp_path / "pf", PerceptionFramesConfig(worlds=1, per_world=4))
    out = tmp_path / "with_pf"
    train([demos], out, TrainConfig(steps=2, batch_size=4, chunk=2, perception_frames=(str(pf),)))
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["data"]["perception_frames"] == 4
    assert cfg["train"]["perception_frames"] == [str(pf.resolve())]
    with pytest.raises(TrainError, match="perception_frames: must be empty unless aux_weight > 0"):
        TrainConfig(aux_weight=0.0, perception_frames=(str(pf),))
    small = collect_perception_frames(
        tmp_path / "pf_small", PerceptionFramesConfig(worlds=1, per_world=1, image_width=48, image_height=36)
    )
    with pytest.raises(TrainError, match="do not match"):
        train([demos], tmp_path / "bad", TrainConfig(steps=1, batch_size=2, perception_frames=(str(small),)))


def test_state_only_head_with_teacher_forcing_runs(demos: Path, tmp_path: Path) -> None:
    # The action head reads only the object state (true + noise in training, the image's estimate at run
    # time) and the joint state.
    out = tmp_path / "state_head"
    train(
        [demos], out, TrainConfig(steps=3, batch_size=8, chunk=2, head_features=False, teacher_forcing_m=0.01)
    )
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model"]["head_features"] is False
    policy = load_policy("bc", {"checkpoint": str(out)})
    # 8 joints + 5 object-state inputs, no image keypoints
    assert policy.model.head[0].in_features == cfg["model"]["state_dim"] + 5
    with EpisodeRunner("tabletop-pick-v1") as runner:
        result = runner.run(policy, seed=3, camera_rate_hz=10.0, max_steps=3)
    assert not result.reason.startswith("policy_error"), result.reason
    with pytest.raises(TrainError, match="head_features"):
        TrainConfig(head_features=False, aux_weight=0.0)
    with pytest.raises(TrainError, match="teacher_forcing_m"):
        TrainConfig(teacher_forcing_m=0.01)


class _GripperSpy:
    """Runs a policy and keeps its gripper commands."""

    def __init__(self, policy) -> None:
        from r2s2r_eval.policy import Policy

        self.seen: list[float] = []
        outer = self

        class Spy(Policy):
            requires = policy.requires

            @property
            def done(self):
                return policy.done

            def reset(self, info):
                policy.reset(info)

            def act(self, observation):
                action = policy.act(observation)
                outer.seen.append(action.gripper)
                return action

        self.policy = Spy()


def test_bc_gripper_command_snaps_to_open_or_closed(checkpoint: Path) -> None:
    # A regressed, slightly-closed command would move the fingers and feed back into the next prediction.
    for snap in (True, False):
        spy = _GripperSpy(load_policy("bc", {"checkpoint": str(checkpoint), "snap_gripper": snap}))
        with EpisodeRunner("tabletop-pick-v1") as runner:
            runner.run(spy.policy, seed=3, camera_rate_hz=10.0, max_steps=4)
        if snap:
            assert set(spy.seen) <= {0.0, 0.04}, spy.seen
        else:
            assert not set(spy.seen) <= {0.0, 0.04}, spy.seen  # the tiny net's raw outputs lie in between


def test_bc_snaps_only_to_the_gripper_levels_of_its_demos(checkpoint: Path, tmp_path: Path) -> None:
    # The bundled expert commands open or closed only; a gradual release leaves no levels to snap to.
    config = json.loads((checkpoint / CHECKPOINT_CONFIG).read_text())
    assert config["gripper_levels"] == [0.0, 0.04]
    gradual = tmp_path / "gradual"
    shutil.copytree(checkpoint, gradual)
    (gradual / CHECKPOINT_CONFIG).write_text(json.dumps({**config, "gripper_levels": None}))
    spy = _GripperSpy(load_policy("bc", {"checkpoint": str(gradual), "snap_gripper": True}))
    with EpisodeRunner("tabletop-pick-v1") as runner:
        runner.run(spy.policy, seed=3, camera_rate_hz=10.0, max_steps=4)
    assert not set(spy.seen) <= {0.0, 0.04}, spy.seen


def test_gripper_levels_are_two_valued_commands_or_none() -> None:
    def data(gripper: list[float]) -> TrainData:
        n = len(gripper)
        targets = np.zeros((n, 3), np.float32)
        targets[:, 1] = gripper
        return TrainData(
            images=np.zeros((n, 2, 2, 3), np.uint8), states=np.zeros((n, 2), np.float32), targets=targets,
            env=None, episode=np.zeros(n, int), joint_names=("j1", "g"), arm_names=("j1",), fps=10.0,
        )  # fmt: skip

    assert data([0.04, 0.04, 0.0, 0.04]).gripper_levels() == pytest.approx([0.0, 0.04])
    assert data([2.0, 0.62, 0.76, 2.0]).gripper_levels() is None  # a gradual release


def test_training_stopped_part_way_resumes_to_the_same_network(
    demos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_resumes_to_the_same_network(
        demos, tmp_path, monkeypatch, TrainConfig(steps=6, batch_size=8, seed=0, save_every=2)
    )


def test_training_refuses_a_resume_state_of_other_settings(demos: Path, tmp_path: Path) -> None:
    out = tmp_path / "bc"
    out.mkdir()
    cfg = TrainConfig(steps=4, batch_size=8, seed=0, save_every=2)
    import torch

    torch.save({"fingerprint": "another training", "step": 2}, out / TRAIN_STATE)
    with pytest.raises(TrainError, match="train_state.pt: left by a training with other settings"):
        train([demos], out, cfg)
    with pytest.raises(TrainError, match="save_every: must be >= 0"):
        TrainConfig(save_every=-1)
