"""Closed loop: episodes on the emulated hardware's cell, and the loop end to end at a tiny size."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from r2s2r_eval.analysis import failure_regions as fr
from r2s2r_eval.analysis.compare import CompareSettings, compare
from r2s2r_eval.analysis.compare_data import load_episodes
from r2s2r_eval.analysis.targets import load_targets
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.episodes.sweep_plan import PolicySpec
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, Policy, PolicyParams
from r2s2r_eval.studies.closed_loop import (
    DEFAULT_TARGETS,
    ClosedLoopConfig,
    build_summary,
    run_closed_loop,
)
from r2s2r_eval.studies.closed_loop_report import format_closed_loop
from r2s2r_eval.studies.study_variations import operator_variations, reconstructed_variations
from r2s2r_sim.cells.emulated_cell import EmulatedCell, check_operator_config
from r2s2r_sim.variations import (
    VariationError,
    load_variation_config,
    make_world,
    sweep_variation,
    with_world_axes,
)
from r2s2r_sim.worlds import WORLDS

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "config/emulated_hardware/ideal_profile.yaml"
VARIATIONS = REPO / "config/variations.yaml"
WORLD = "tabletop-pick-v1"


@pytest.fixture(autouse=True)
def _restore_world_registry():
    """The closed loop registers its reconstructed world id in-process; keep other tests' registry clean."""
    saved = dict(WORLDS)
    yield
    WORLDS.clear()
    WORLDS.update(saved)


class _StepPolicy(Policy):
    """Holds home, then commands a 0.2 rad step of the first joint at t = 0.1 s; records what it saw."""

    params_type = PolicyParams
    requires = frozenset({ObservationKind.JOINT_STATE, ObservationKind.RGB, ObservationKind.DEPTH})

    def reset(self, info: EpisodeInfo) -> None:
        self.info = info
        self.home: np.ndarray | None = None
        self.seen: list[tuple[float, np.ndarray]] = []
        self.images = 0
        self.t_cmd: float | None = None

    def act(self, observation: Observation) -> Action:
        q = observation.positions(self.info.arm_joint_names)
        self.home = q.copy() if self.home is None else self.home
        self.seen.append((observation.stamp, q))
        self.images += observation.rgb is not None
        target = self.home.copy()
        if observation.stamp >= 0.1 - 1e-9:
            target[0] += 0.2
            self.t_cmd = observation.stamp if self.t_cmd is None else self.t_cmd
        return Action(arm_positions=target, gripper=self.info.gripper_command_range[0])


def test_emulated_cell_applies_latency_noise_and_judges() -> None:
    variation = sweep_variation(operator_variations(VARIATIONS), seed=3, index=0, method="random")
    cell = EmulatedCell(WORLD, PROFILE, variation=variation)
    with EpisodeRunner(cell) as runner:
        # The operator put the cube at the variation's pose.
        cell.reset(5)
        pos, _ = cell.world.body_pose("cube")
        assert pos[:2] == pytest.approx([variation.params["objects.x"], variation.params["objects.y"]])
        # Latency: a command submitted at t0 is not a servo setpoint before t0 + latency.
        policy = _StepPolicy()
        result = runner.run(policy, 5, control_rate_hz=50.0, camera_rate_hz=10.0, max_steps=20)
        latency = cell.profile.driver.command_latency_s
        ctrl = cell.arm.world.data.ctrl[0]
        assert ctrl == pytest.approx(policy.home[0] + 0.2, abs=1e-6)
        assert cell.arm.pending_commands > 0  # the last commands are still in flight
        assert latency > 0
        # Noisy joint states: two readings of the same state differ.
        a, b = cell.arm.joint_state()[0], cell.arm.joint_state()[0]
        assert not np.array_equal(a, b)
        # Camera at 10 Hz over 0.4 s: images arrive; outcome comes from the judge, not the sim task.
        assert policy.images == 20
        assert result.reason == "not_achieved (max_steps)" and not result.success
        assert result.world_id == WORLD and result.world_hash == cell.arm.base_world_hash
        assert result.metrics  # the judge's task terms
    # The step shows up in the measured joint only after the latency.
    assert policy.t_cmd is not None
    before = [q[0] - policy.home[0] for t, q in policy.seen if policy.t_cmd < t < policy.t_cmd + latency]
    after = [q[0] - policy.home[0] for t, q in policy.seen if t >= policy.t_cmd + latency + 0.1]
    assert before and all(abs(d) < 0.003 for d in before)  # joint noise is 0.5 mrad
    assert after and all(d > 0.02 for d in after)


def test_emulated_cell_refuses_non_operator_axes() -> None:
    variation = sweep_variation(load_variation_config(VARIATIONS), seed=0, index=0, method="random")
    with pytest.raises(VariationError, match="physics"):
        check_operator_config(variation.config)
    with pytest.raises(VariationError, match="operator"):
        EmulatedCell(WORLD, PROFILE, variation=variation)


def test_reference_policy_succeeds_on_the_emulated_hardware() -> None:
    from r2s2r_eval.policy import load_policy

    cell = EmulatedCell(WORLD, PROFILE)
    with EpisodeRunner(cell) as runner:
        result = runner.run(load_policy("reference", {}), 2, camera_rate_hz=1.0)
    assert result.success, result.reason
    assert result.reason == "success" and result.duration_s < cell.world.config.task.timeout


# What `r2s2r real2sim` writes into a reconstructed world (r2s2r_capture.real2sim.world_variations), by hand.
WORLD_AXES = {
    "appearance": {"enabled": False},
    "objects": {"enabled": False},
    "clutter": {"enabled": False},
    "robot_state": {"enabled": False},
    "physics": {"friction_geoms": ["cube_geom"], "damping_scale": [1.0, 1.0], "gain_scale": [1.0, 1.0]},
    "camera": {"position_jitter": 0.002, "rotation_jitter": 0.002, "fovy_jitter": 0.1},
    "dynamics": {
        "enabled": True,
        "parameters": [
            {"name": "shoulder_pan/kp", "range": [350.0, 450.0]},
            {"name": "command_delay_s", "range": [0.005, 0.015]},
        ],
    },
}


def test_reconstructed_sim_side_draws_the_world_over_its_own_variations(tmp_path: Path) -> None:
    world = tmp_path / "world"
    shutil.copytree(WORLDS[WORLD], world)
    operator = operator_variations(VARIATIONS)
    with pytest.raises(VariationError, match=r"variations\.yaml: no such file.*real2sim"):
        (world / "variations.yaml").unlink(missing_ok=True)
        with_world_axes(operator, world)
    (world / "variations.yaml").write_text(yaml.safe_dump(WORLD_AXES), encoding="utf-8")
    cfg = with_world_axes(operator, world)
    assert cfg.enabled_axes() == ("appearance", "objects", "clutter", "physics", "camera", "dynamics")
    # Sobol side: a sweep point gives the same world twice; two points differ, also in the world's axes.
    a, again, b = (sweep_variation(cfg, seed=0, index=i) for i in (3, 3, 4))
    assert make_world(world, a).world_hash == make_world(world, again).world_hash
    assert make_world(world, a).world_hash != make_world(world, b).world_hash
    assert a.axis_params("dynamics") != b.axis_params("dynamics")
    varied = make_world(world, a)
    assert varied.command_delay_s == pytest.approx(a.axis_params("dynamics")["command_delay_s"])
    # Paired side: the real side's seed draws the operator's very variation, plus the world's axes.
    real = sweep_variation(operator, seed=1, index=2, method="random")
    paired = sweep_variation(cfg, seed=1, index=2, method="random")
    assert {k: paired.params[k] for k in real.params} == real.params
    assert paired.axis_params("dynamics") and paired.axis_params("physics")


def test_contacts_are_drawn_on_the_reconstructed_side_only_when_asked(tmp_path: Path) -> None:
    world = tmp_path / "world"
    shutil.copytree(WORLDS[WORLD], world)
    (world / "variations.yaml").write_text(yaml.safe_dump(WORLD_AXES), encoding="utf-8")
    operator = operator_variations(VARIATIONS)
    plain = reconstructed_variations(operator, world, randomise=True, vary_contacts=False)
    assert "contact" not in plain.enabled_axes()
    cfg = reconstructed_variations(operator, world, randomise=True, vary_contacts=True)
    assert cfg.enabled_axes()[-2:] == ("dynamics", "contact")
    assert cfg.contact.geoms == ("left_finger_geom", "right_finger_geom")  # the world's gripper pads
    # The real side's seed still draws the operator's very variation on the paired side.
    real = sweep_variation(operator, seed=1, index=2, method="random")
    paired = sweep_variation(cfg, seed=1, index=2, method="random")
    assert {k: paired.params[k] for k in real.params} == real.params
    m = make_world(world, paired).model
    assert m.opt.impratio == pytest.approx(paired.axis_params("contact")["impratio"])
    identified = reconstructed_variations(operator, world, randomise=False, vary_contacts=True)
    assert identified.enabled_axes() == ("appearance", "objects", "clutter", "contact")


def test_closed_loop_grades_against_the_shipped_targets(tmp_path: Path) -> None:
    """The study passes config/compare_targets.yaml; the paired accuracy is the graded failure prediction."""
    rows = "".join(
        f"{p},{(i + k) % 3 != 0},{WORLD},{i / 10}\n" for k, p in enumerate(("a", "b", "c")) for i in range(9)
    )
    table = tmp_path / "t.csv"
    table.write_text("policy,success,world_id,var.physics.friction_scale\n" + rows)
    targets = load_targets(DEFAULT_TARGETS)
    episodes = load_episodes(table)
    s = compare(episodes, episodes, CompareSettings(resamples=20, targets=targets)).summary
    pair = fr.PairedAgreement(
        n=4,
        unmatched=0,
        accuracy=0.75,
        constant_guess=0.5,
        failure_recall=1.0,
        failure_precision=0.5,
        balanced_accuracy=0.75,
        kappa=0.5,
        per_policy={},
    )
    summary = build_summary(
        s,
        s,
        wall={"total": 1.0},
        cfg=ClosedLoopConfig(out=tmp_path / "o"),
        paired={"real_vs_reconstructed": pair, "real_vs_bundled": pair},
        targets=targets,
    )
    assert summary["targets"] == {
        "pearson": ">= 0.95",
        "mmrv": "<= 0.03",
        "failure_prediction_accuracy": ">= 0.85",
        "failure_prediction_balanced_accuracy": ">= 0.75",
    }
    graded = summary["real_vs_reconstructed"]["targets"]
    assert graded["failure_prediction_accuracy"]["measured"] == 0.75
    assert graded["failure_prediction_accuracy"]["met"] is False and graded["mmrv"]["met"] is True
    balanced = graded["failure_prediction_balanced_accuracy"]
    assert (balanced["target"], balanced["measured"], balanced["met"]) == (">= 0.75", 0.75, True)
    text = format_closed_loop(summary)
    assert "failure prediction accuracy  >= 0.85  0.750 NOT met" in text
    assert "  balanced accuracy          >= 0.75  0.750 met" in text
    assert "  Cohen's kappa              -        0.500" in text
    assert "mmrv                         <= 0.03" in text and " met " in text


@pytest.mark.study
@pytest.mark.timeout(900)  # capture, identification and three pools: ~2-4 min on 2 shared cores
def test_closed_loop_end_to_end(tmp_path: Path) -> None:
    cfg = ClosedLoopConfig(
        out=tmp_path / "closed_loop",
        policies=(PolicySpec(name="reference"), PolicySpec(name="topdown")),
        trials=2,
        workers=1,
        quick_capture=True,
    )
    summary = run_closed_loop(cfg)
    out = cfg.out
    for report in ("real_vs_reconstructed", "real_vs_bundled"):
        assert (out / report / "report.html").is_file()
        assert (out / report / "summary.json").is_file()
        assert (out / report / "scatter.png").is_file()
    written = json.loads((out / "summary.json").read_text())
    assert written == json.loads(json.dumps(summary))
    assert set(written["targets"]) == {
        "pearson",
        "mmrv",
        "failure_prediction_accuracy",
        "failure_prediction_balanced_accuracy",
    }
    for side in ("real_vs_reconstructed", "real_vs_bundled"):
        s = written[side]
        for name in ("pearson", "mmrv"):
            assert set(s[name]) == {"value", "low", "high"}
        assert "failure_prediction_accuracy" in s and "targets" in s
    assert set(written["bundled_vs_reconstructed"]) >= {"pearson", "mmrv", "failure_prediction_accuracy"}
    assert len(written["policies"]) == 2
    for p in written["policies"]:
        assert p["real"]["trials"] == p["sim"]["trials"] == p["baseline"]["trials"] == 2
    assert written["wall_s"]["total"] > 0 and math.isfinite(written["wall_s"]["total"])
    assert (out / "summary.txt").read_text().count("pearson") >= 1
    # Real rows carry the operator's variation vector (object pose, lighting, clutter).
    real = json.loads((out / "real_vs_reconstructed" / "summary.json").read_text())
    assert real["episodes"] == {"sim": 4, "real": 4}
    # Every episode ran: an operator axis the reconstructed world lacks would fail them all quietly.
    for store in sorted((out / "work").glob("*.sqlite")):
        with ResultsStore(store) as s:
            reasons = {r.reason for r in s.rows()}
        errors = {r for r in reasons if r.startswith(("variation_error", "episode_error"))}
        assert not errors, (store, reasons)
    # The reconstructed world's sides drew its identified dynamics too; the others did not.
    for store, randomised in (("sim_reconstructed", True), ("paired_reconstructed", True), ("real", False)):
        with ResultsStore(out / "work" / f"{store}.sqlite") as s:
            drawn = ['"dynamics.' in json.dumps(r.variation) for r in s.rows()]
        assert drawn and all(d == randomised for d in drawn), store
    # A store may hold an earlier run's episodes (other settings): only this plan's are compared.
    with ResultsStore(out / "work" / "real.sqlite") as store:
        first = next(store.rows())
        store.add(dataclasses.replace(first, id=0, success=not first.success, episode_key="stale-run"))
    again = run_closed_loop(cfg)
    assert again["real_vs_reconstructed"] == summary["real_vs_reconstructed"]
    assert again["episodes_run_now"] == {k: 0 for k in again["episodes_run_now"]}
    # Paired sides: every real episode has a sim partner at its own variation and seed.
    for side in ("real_vs_reconstructed", "real_vs_bundled"):
        pairs = written[side]["failure_prediction_paired"]
        assert pairs["pairs"] == 4 and pairs["unmatched_real_episodes"] == 0
        acc = written[side]["failure_prediction_accuracy"]
        assert acc == written[side]["targets"]["failure_prediction_accuracy"]["measured"]
        assert 0.0 <= acc <= 1.0


def test_studies_are_r2s2r_subcommands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from r2s2r_eval.studies import closed_loop, transfer

    parser = argparse.ArgumentParser(prog="r2s2r")
    sub = parser.add_subparsers(dest="command", required=True)
    closed_loop.register(sub)
    transfer.register(sub)
    ns = parser.parse_args(["closed-loop", "--out", str(tmp_path / "cl"), "--trials", "0"])
    assert ns.func(ns) == 2  # bad input: refused before anything runs
    assert "trials: must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "cl").exists()
    # A family given as policies: each is built and checked against the task before the capture.
    for policies, message in (
        (["reference"], "the comparison needs at least 2"),
        (["reference", "push"], "--policy push: "),
        (["reference", "bc:checkpoint=" + str(tmp_path / "none")], "--policy bc:checkpoint="),
    ):
        args = ["closed-loop", "--out", str(tmp_path / "cl"), *(f"--policy={p}" for p in policies)]
        ns = parser.parse_args(args)
        assert ns.func(ns) == 2, policies
        assert message in capsys.readouterr().err
    assert not (tmp_path / "cl").exists()
    ns = parser.parse_args(["transfer", "--small", "--out", str(tmp_path / "tr")])
    assert ns.func is transfer.cmd_transfer and ns.small


def test_a_world_of_your_own_brings_its_variations_and_nominal_camera(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from r2s2r_eval.studies import closed_loop
    from r2s2r_sim.worlds import world_path

    parser = argparse.ArgumentParser(prog="r2s2r")
    closed_loop.register(parser.add_subparsers(dest="command", required=True))
    own = tmp_path / "my_arm_world"
    shutil.copytree(world_path(WORLD), own)
    shutil.copy(VARIATIONS, own / "variations.yaml")  # as `r2s2r world new` writes one
    ns = parser.parse_args(
        ["closed-loop", "--out", str(tmp_path / "cl"), "--world", str(own), "--profile", "ideal"]
    )
    world, variations, family = closed_loop._study_world(ns, closed_loop.task_study("pick"))
    assert world == str(own)
    assert variations == own / "variations.yaml"
    nominal = [p for p in family if "assume_camera_of" in p.params]
    assert [p.params["assume_camera_of"] for p in nominal] == [str(own)]  # its own nominal camera
    assert len(family) == len(closed_loop.FAMILY)
    # Refused before anything runs: a world of another task, a world without a profile written for it.
    for args, message in (
        (["--world", "tabletop-push-v1", "--profile", "ideal"], "--world tabletop-push-v1: its task is push"),
        (["--world", str(own)], "give --profile"),
    ):
        ns = parser.parse_args(["closed-loop", "--out", str(tmp_path / "cl"), *args])
        assert ns.func(ns) == 2, args
        assert message in capsys.readouterr().err
    assert not (tmp_path / "cl").exists()
