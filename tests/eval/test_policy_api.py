"""Policy API: observation/action contracts, the plug-in base class and the registry."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from r2s2r_eval.policy import (
    Action,
    EpisodeInfo,
    Observation,
    Policy,
    PolicyError,
    PolicyParams,
    available_policies,
    load_policy,
    params_from_dict,
    policy_params_from_yaml,
    resolve_policy,
)


def _obs(**kw: object) -> Observation:
    base: dict[str, object] = dict(
        stamp=1.0, joint_names=("a", "b"), joint_positions=np.zeros(2), joint_velocities=np.zeros(2)
    )
    base.update(kw)
    return Observation(**base)  # type: ignore[arg-type]


def _info(**kw: object) -> EpisodeInfo:
    base: dict[str, object] = dict(
        episode_index=0,
        seed=3,
        world_id="w",
        world_dir=Path("w"),
        arm_joint_names=("a", "b"),
        gripper_command_range=(0.04, 0.0),
        control_period=0.1,
    )
    base.update(kw)
    return EpisodeInfo(**base)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Params(PolicyParams):
    gain: float = 1.0
    label: str = "x"


class _Hold(Policy):
    params_type = _Params

    def reset(self, info: EpisodeInfo) -> None:
        self.info = info

    def act(self, observation: Observation) -> Action:
        return Action(arm_positions=observation.positions(self.info.arm_joint_names), gripper=0.0)


def test_observation_contract() -> None:
    obs = _obs(rgb=np.zeros((4, 5, 3), np.uint8), depth=np.zeros((4, 5), np.float32), camera_k=np.eye(3))
    assert obs.positions(["b", "a"]).tolist() == [0.0, 0.0]
    with pytest.raises(PolicyError, match="joints \\['c'\\] not in joint_names"):
        obs.positions(["c"])
    with pytest.raises(PolicyError, match="joint_positions: must have shape \\(2,\\)"):
        _obs(joint_positions=np.zeros(3))
    with pytest.raises(PolicyError, match="rgb: must be HxWx3 uint8"):
        _obs(rgb=np.zeros((4, 5, 3), np.float32))
    with pytest.raises(PolicyError, match="depth must be aligned"):
        _obs(rgb=np.zeros((4, 5, 3), np.uint8), depth=np.zeros((5, 4), np.float32))
    with pytest.raises(PolicyError, match="camera_pose: must be a \\(4, 4\\) array"):
        _obs(camera_pose=np.eye(3))
    with pytest.raises(PolicyError, match="camera_k: must be finite"):
        _obs(camera_k=np.full((3, 3), np.nan))


def test_action_contract() -> None:
    info = _info()
    Action(arm_positions=np.zeros(2), gripper=0.02).check(info)
    with pytest.raises(PolicyError, match="must be finite"):
        Action(arm_positions=np.array([0.0, np.nan]), gripper=0.0)
    with pytest.raises(PolicyError, match="gripper: must be finite"):
        Action(arm_positions=np.zeros(2), gripper=float("inf"))
    with pytest.raises(PolicyError, match="has 3 values, the arm has 2 joints"):
        Action(arm_positions=np.zeros(3), gripper=0.0).check(info)
    with pytest.raises(PolicyError, match="outside the command range"):
        Action(arm_positions=np.zeros(2), gripper=0.5).check(info)


def test_episode_info_rng_is_seeded_and_checked() -> None:
    assert _info().rng().normal() == _info().rng().normal()
    assert _info(seed=4).rng().normal() != _info().rng().normal()
    with pytest.raises(PolicyError, match="control_period: must be > 0"):
        _info(control_period=0.0)


def test_subclass_contract_checked_at_definition() -> None:
    with pytest.raises(TypeError, match="must override Policy.act"):

        class _NoAct(Policy):  # noqa: F841
            def reset(self, info: EpisodeInfo) -> None: ...

    with pytest.raises(TypeError, match="params_type must be a dataclass derived from PolicyParams"):

        class _BadParams(Policy):  # noqa: F841
            params_type = dict  # type: ignore[assignment]

            def reset(self, info: EpisodeInfo) -> None: ...
            def act(self, observation: Observation) -> Action: ...

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class _NoDefault(PolicyParams):
        x: float

    with pytest.raises(TypeError, match="_NoDefault.x needs a default value"):

        class _NoDefaultParams(Policy):  # noqa: F841
            params_type = _NoDefault

            def reset(self, info: EpisodeInfo) -> None: ...
            def act(self, observation: Observation) -> Action: ...

    with pytest.raises(TypeError, match="act must have the signature act\\(self, observation\\)"):

        class _BadSig(Policy):  # noqa: F841
            def reset(self, info: EpisodeInfo) -> None: ...
            def act(self, obs: Observation, extra: int = 0) -> Action: ...  # type: ignore[override]


def test_params_from_dict() -> None:
    assert params_from_dict(_Params, {"gain": 2}) == _Params(gain=2.0)
    with pytest.raises(
        PolicyError, match="unknown parameter\\(s\\) \\['gian'\\] \\(valid: \\['gain', 'label'\\]\\)"
    ):
        params_from_dict(_Params, {"gian": 2})
    with pytest.raises(PolicyError, match="parameter 'gain' must be float, got str"):
        params_from_dict(_Params, {"gain": "fast"})
    with pytest.raises(PolicyError, match="parameter 'gain' must be float"):
        params_from_dict(_Params, {"gain": True})


def test_registry_lists_reference_and_fails_loudly() -> None:
    assert "reference" in available_policies()
    policy = load_policy("reference", {"speed": 2})
    assert policy.params.speed == 2.0  # type: ignore[attr-defined]
    with pytest.raises(
        ValueError, match="unknown policy 'nope': registered policies are \\[.*'reference'.*\\]"
    ):
        load_policy("nope", {})
    with pytest.raises(PolicyError, match="speed: must be in \\(0, 10\\]"):
        load_policy("reference", {"speed": -1.0})
    with pytest.raises(PolicyError, match="cannot import"):
        resolve_policy("no_such_module_xyz:Thing")
    with pytest.raises(PolicyError, match="is not a subclass"):
        resolve_policy("numpy:ndarray")


def test_module_class_string_loads_a_plugin() -> None:
    cls = resolve_policy(f"{__name__}:_Hold")
    assert cls is _Hold
    policy = load_policy(f"{__name__}:_Hold", {"label": "y"})
    policy.reset(_info())
    action = policy.act(_obs(joint_positions=np.array([0.1, 0.2])))
    assert action.arm_positions.tolist() == [0.1, 0.2]
    with pytest.raises(PolicyError, match="params must be _Params"):
        _Hold(PolicyParams())


def test_a_shared_base_is_checked_in_its_subclasses() -> None:
    from r2s2r_eval.policies.scripted.base import ScriptedPolicy

    class Partial(ScriptedPolicy, base=True):  # a shared base may leave reset/act to its subclasses
        pass

    assert issubclass(Partial, ScriptedPolicy)
    with pytest.raises(TypeError, match="must override Policy.act"):
        type("NoAct", (ScriptedPolicy,), {"reset": lambda self, info: None})


def test_fresh_required_defaults_to_requires() -> None:
    assert _Hold().fresh_required() == _Hold.requires


def test_policy_params_text_is_read_as_a_mapping_and_bad_text_names_the_parameter() -> None:
    assert policy_params_from_yaml("", PolicyError) == {}
    assert policy_params_from_yaml("{speed: 0.5}", PolicyError) == {"speed": 0.5}
    with pytest.raises(PolicyError, match=r"^parameter policy_params: not valid YAML: "):
        policy_params_from_yaml("{speed: [", PolicyError)
    with pytest.raises(
        PolicyError, match=r"^parameter policy_params: must be a YAML mapping, got '\[1, 2\]'$"
    ):
        policy_params_from_yaml("[1, 2]", PolicyError)
