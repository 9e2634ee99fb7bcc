"""lerobot's ACT and Diffusion Policy as ``r2s2r train`` learners: they learn, checkpoint, resume and act."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs PyTorch (torch==2.13.0 CPU)")
pytest.importorskip("draccus", reason="lerobot's policies need draccus (`make setup` installs it)")

from r2s2r_eval.episodes.runner import EpisodeRunner  # noqa: E402
from r2s2r_eval.learning.demos import DemoConfig, collect_demos  # noqa: E402
from r2s2r_eval.learning.train import TrainConfig, TrainError, train  # noqa: E402
from r2s2r_eval.learning.train_data import load_demonstrations  # noqa: E402
from r2s2r_eval.policies.bc.lerobot_net import LeRobotNet  # noqa: E402
from r2s2r_eval.policies.bc.policy import load_checkpoint  # noqa: E402
from r2s2r_eval.policy import available_policies, load_policy  # noqa: E402
from resume_check import assert_resumes_to_the_same_network  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# Small enough to train in seconds; the ResNet-18 backbone is the learners' own and stays full size.
# One torch thread: the suite runs two tests at once on two cores, some of them timing-sensitive DDS graphs.
SMALL = {"batch_size": 8, "hidden": 64, "lr": 1e-3, "aux_weight": 0.0, "seed": 0, "num_threads": 1}
CHUNK = {"act": 4, "diffusion": 4}
# The loss after 60 steps against after 1, at most: Diffusion's noise-prediction loss falls slowly at first
# (about 1.13 -> 0.98 here), ACT's L1 + KL fast.
LOSS_RATIO = {"act": 0.7, "diffusion": 0.93}


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demos") / "ds"
    collect_demos(root, DemoConfig(variations=REPO / "config/variations.yaml", episodes=2, seed=0))
    return root


def _loss_on_demos(checkpoint: Path, demos: Path) -> float:
    """The learner's own loss on the first 32 frames, over fixed noise draws (Diffusion's loss is random)."""
    net, config = load_checkpoint(checkpoint)
    assert isinstance(net, LeRobotNet)
    data = load_demonstrations([demos], absolute=True, time_input=True)
    norm = config["normalization"]
    n = 32
    img = torch.from_numpy(data.images[:n]).permute(0, 3, 1, 2).float() / 255.0
    s = torch.from_numpy((data.states[:n] - norm["state_mean"]) / np.asarray(norm["state_std"])).float()
    k = net.cfg.chunk
    t = (data.chunked_targets(k)[:n] - np.tile(norm["action_mean"], k)) / np.tile(norm["action_std"], k)
    torch.manual_seed(0)
    net.train()
    with torch.no_grad():
        losses = [float(net.imitation_loss(img, s, torch.from_numpy(t).float())) for _ in range(4)]
    net.eval()
    return float(np.mean(losses))


@pytest.mark.study
@pytest.mark.parametrize("learner", ["act", "diffusion"])
def test_learner_lowers_its_loss_and_acts_as_a_policy(learner: str, demos: Path, tmp_path: Path) -> None:
    short, long = tmp_path / "short", tmp_path / "long"
    base = TrainConfig(learner=learner, steps=1, chunk=CHUNK[learner], **SMALL)
    train([demos], short, base)
    train([demos], long, TrainConfig(**{**base.__dict__, "steps": 60}))
    config = json.loads((long / "config.json").read_text())
    assert config["policy"] == "lerobot" and config["model"]["learner"] == learner
    before, after = _loss_on_demos(short, demos), _loss_on_demos(long, demos)
    assert after < LOSS_RATIO[learner] * before, (before, after)

    assert {"lerobot", learner} <= set(available_policies())
    policy = load_policy(learner, {"checkpoint": str(long)})
    assert isinstance(policy.model, LeRobotNet) and policy.model.cfg.chunk == CHUNK[learner]
    last = []
    with EpisodeRunner("tabletop-pick-v1") as runner:
        for _ in range(2):
            result = runner.run(policy, seed=3, camera_rate_hz=10.0, max_steps=6)
            assert result.steps == 6 and not result.reason.startswith("policy_error"), result.reason
            assert len(policy._chunks) == CHUNK[learner]  # its chunks are ensembled as the CNN's are
            assert policy._last is not None
            last.append(policy._last.arm_positions)
    # An episode's actions follow from its seed (Diffusion Policy's sampling noise included).
    np.testing.assert_array_equal(last[0], last[1])


@pytest.mark.study
def test_act_training_stopped_part_way_resumes_to_the_same_network(
    demos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_resumes_to_the_same_network(
        demos, tmp_path, monkeypatch, TrainConfig(learner="act", steps=6, chunk=4, save_every=2, **SMALL)
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"learner": "act", "aux_weight": 1.0}, "aux_weight: must be 0 for learner 'act'"),
        ({"learner": "diffusion", "aux_weight": 0.0, "chunk": 10}, "chunk: must be a multiple of 4"),
        ({"learner": "transformer"}, "learner: must be one of cnn, act, diffusion"),
    ],
)
def test_learner_settings_are_checked(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(TrainError, match=message):
        TrainConfig(**fields)


def test_cli_learner_sets_its_own_defaults(
    demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from r2s2r_eval.cli import train as train_cli

    out = tmp_path / "act"
    args = ["--learner", "act", "--dataset", str(demos), "--out", str(out), "--steps", "1", "--threads", "1"]
    args.append("--quiet")
    assert train_cli.main([*args, "--batch-size", "4"]) == 0
    assert f"--policy lerobot:checkpoint={out}" in capsys.readouterr().out
    trained = json.loads((out / "config.json").read_text())["train"]
    assert (trained["learner"], trained["aux_weight"], trained["chunk"], trained["lr"]) == (
        "act",
        0.0,
        10,
        1e-4,
    )
    bad = ["--learner", "diffusion", "--chunk", "6", "--dataset", str(demos), "--out", str(tmp_path / "d")]
    assert train_cli.main([*bad, "--quiet"]) == 2
    assert "chunk: must be a multiple of 4" in capsys.readouterr().err


def test_a_missing_lerobot_module_is_named_with_how_to_install_it(
    demos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from r2s2r_eval.cli import train as train_cli

    monkeypatch.setitem(sys.modules, "lerobot.policies.act.modeling_act", None)  # as if not installed
    argv = ["--learner", "act", "--dataset", str(demos), "--out", str(tmp_path / "a"), "--steps", "1"]
    assert train_cli.main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "learner 'act' needs lerobot's policies" in err and "make setup" in err
    assert not (tmp_path / "a" / "policy.pt").exists()


@pytest.mark.parametrize("learner", ["act", "diffusion"])
def test_held_out_frames_are_scored_in_eval_mode(learner: str) -> None:
    """Validation runs after training, in eval mode, where ACT's VAE has no latent to score."""
    from r2s2r_eval.policies.bc.lerobot_net import build_network
    from r2s2r_eval.policies.bc.model import BCModelConfig

    cfg = BCModelConfig(learner=learner, chunk=4, state_dim=9, action_dim=8, hidden=64)
    net = build_network(cfg)
    net.eval()
    img, s, t = torch.rand(2, 3, 72, 96), torch.randn(2, 9), torch.randn(2, 4 * 8)
    loss = float(net.validation_loss(img, s, t))
    assert np.isfinite(loss) and loss > 0
    if learner == "act":  # the L1 of what it would do
        assert loss == pytest.approx(float((net(img, s) - t).abs().mean()), rel=1e-5)
