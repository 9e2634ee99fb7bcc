"""Which tasks a policy solves: ``Policy.tasks``, ``auto`` resolved to the world's reference policy, and a
policy for another task refused before the first episode (``r2s2r sweep``, the policy node's check)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from r2s2r_eval.cli.sweep import main
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.policy import (
    Action,
    EpisodeInfo,
    Observation,
    Policy,
    PolicyError,
    available_policies,
    check_policy_task,
    policies_for_task,
    resolve_policy,
)
from r2s2r_sim.tasks.config import AUTO_POLICY, REFERENCE_POLICIES, TaskType, reference_policy


def test_every_task_has_a_registered_reference_policy_that_declares_it() -> None:
    registered = available_policies()
    for task in TaskType:
        name = reference_policy(AUTO_POLICY, task)
        assert name == REFERENCE_POLICIES[task] and name in registered
        assert task.value in resolve_policy(name).tasks  # type: ignore[operator]
        assert name in policies_for_task(task)
    assert reference_policy("bc", TaskType.DRAWER) == "bc"  # a named policy stays as named


def test_tasks_declaration_is_checked_at_definition() -> None:
    with pytest.raises(TypeError, match=r"_Unknown.tasks must be None \(any task\) or a non-empty frozenset"):

        class _Unknown(Policy):  # noqa: F841
            tasks = frozenset({"juggle"})

            def reset(self, info: EpisodeInfo) -> None: ...
            def act(self, observation: Observation) -> Action: ...

    class _AnyTask(Policy):
        def reset(self, info: EpisodeInfo) -> None: ...
        def act(self, observation: Observation) -> Action: ...

    assert _AnyTask.tasks is None  # a plug-in that declares nothing runs on any task, as before


def test_a_policy_for_another_task_is_refused_naming_the_task_and_its_solvers() -> None:
    check_policy_task("drawer_reference", TaskType.DRAWER, "tabletop-drawer-v1")
    check_policy_task("bc", TaskType.DRAWER, "tabletop-drawer-v1")  # tasks None: any task
    with pytest.raises(
        PolicyError,
        match="policy 'reference' solves pick_place, but world 'tabletop-drawer-v1' has task 'drawer' "
        r"\(policies that solve it: drawer_reference;",
    ):
        check_policy_task("reference", TaskType.DRAWER, "tabletop-drawer-v1")


def _argv(tmp_path: Path, world: str, policy: str) -> list[str]:
    return [
        "--world", world, "--policy", policy, "-n", "1", "--max-steps", "1", "--workers", "1",
        "--results", str(tmp_path / "r.sqlite"), "--quiet",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("world", "expected"),
    [("tabletop-push-v1", "push_reference"), ("tabletop-drawer-v1", "drawer_reference")],
)
def test_sweep_policy_auto_runs_the_worlds_reference_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], world: str, expected: str
) -> None:
    assert main(_argv(tmp_path, world, "auto")) == 0
    assert f"policies {expected} (auto: " in capsys.readouterr().err
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert [row.policy for row in store.rows()] == [expected]


def test_sweep_of_a_policy_for_another_task_exits_2_before_any_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(tmp_path, "tabletop-drawer-v1", "reference")) == 2
    err = capsys.readouterr().err
    assert err.startswith("r2s2r sweep: error: --policy reference: "), err
    assert re.search("world 'tabletop-drawer-v1' has task 'drawer' .*solve it: drawer_reference", err), err
    assert not (tmp_path / "r.sqlite").exists()
