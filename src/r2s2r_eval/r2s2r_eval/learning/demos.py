"""Expert demonstrations across sampled variations, exported as a LeRobot v3.0 dataset and as MCAP bags.

The expert is either the privileged state-feedback expert of the world's task (pick-and-place in
:mod:`r2s2r_eval.learning.demo_expert`, default, or push in :mod:`r2s2r_eval.learning.push_expert`: it reads
the true object pose every step, so its labels are a function of the observed state) or the reference
policy (RGB-D perception at the first frame, then a timed script through IK); either is run by the in-process
:class:`~r2s2r_eval.episodes.runner.EpisodeRunner` in a world built from ``(world, variation config, seed)``.
A recording wrapper renders a small RGB frame of the same camera at every control step (the policy's image
size, so no 640x480 frame is rendered per step) and keeps joint state, action and the variation's unit
point.  Only successful episodes are kept.  The dataset is written by ``lerobot``'s own ``LeRobotDataset``
(:mod:`r2s2r_eval.learning.lerobot_v3`); each episode's attempt, seed, world and realised variation
parameters are kept beside it in ``meta/r2s2r_episodes.jsonl``.

Determinism: attempt ``i`` uses seed ``SeedSequence([seed, i])``; episode ``k`` of the dataset is the
``k``-th successful attempt.  Resuming: attempts already made are read back from
``meta/r2s2r_attempts.jsonl`` and ``meta/r2s2r_episodes.jsonl`` and skipped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from r2s2r_capture.bags.messages import BagMessages
from r2s2r_capture.bags.writer import BagWriter
from r2s2r_sim.interface import load_interface
from r2s2r_sim.ranges import check_fields, within
from r2s2r_sim.render.renderer import RgbdRenderer
from r2s2r_sim.variations import Variation, load_variation_config, sample_variation
from r2s2r_sim.variations.engine import dimension_names
from r2s2r_sim.worlds import world_path

from r2s2r_eval.episodes.runner import EpisodeResult, EpisodeRunner
from r2s2r_eval.learning.demo_expert import privileged_expert
from r2s2r_eval.learning.lerobot_format import EpisodeData, read_info
from r2s2r_eval.learning.lerobot_v3 import INDEX_FEATURES, LeRobotV3Writer
from r2s2r_eval.policies.reference.config import ReferenceParams
from r2s2r_eval.policies.reference.policy import ReferencePolicy
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, Policy, load_policy

__all__ = [
    "DEFAULT_TASK",
    "ENV_STATE_NAMES",
    "DemoConfig",
    "DemoError",
    "DemoSummary",
    "attempt_seed",
    "collect_demos",
    "dataset_features",
    "downscale",
]

DEFAULT_TASK = "pick the red cube and place it in the blue bin"
ATTEMPTS_FILE = "meta/r2s2r_attempts.jsonl"
EXPERT_KINDS = ("privileged", "reference")
# Privileged task-object state per frame (LeRobot's ``observation.environment_state``), in the world frame:
# the yaw enters as cos/sin of 4*yaw because a cube looks (and is grasped) the same every quarter turn.
ENV_STATE_NAMES = ("object_x", "object_y", "object_z", "object_cos4yaw", "object_sin4yaw")
# Seed-sequence key of the DART noise stream, apart from the world's and the policy's streams.
_NOISE_STREAM = 0x44415254
# The pick experts need one full-size RGB-D frame (t = 0); a rate this low gives no other full-size frame.
# Another task's scripted policy steers by what it sees (a push follows the object): it gets the camera's
# own rate, as in a sweep.
_PICK_EXPERT_CAMERA_RATE_HZ = 1e-3


class DemoError(ValueError):
    """Demonstrations cannot be collected as configured (names the field at fault)."""


@dataclass(frozen=True, kw_only=True)
class DemoConfig:
    """What :func:`collect_demos` records.

    Attributes:
        world: bundled world id or world folder (e.g. a ``r2s2r real2sim`` output).
        variations: variation config YAML; ``None`` records the world without variations (cube pose still
            drawn by the world's reset seed).
        episodes: successful episodes to keep (>= 1).
        max_attempts: attempts before giving up (>= episodes); ``None``: ``3 * episodes + 5``.
        seed: base seed (>= 0).
        image_width, image_height: recorded RGB size (px, even); the BC policy's input size.
        render_scale: frames are rendered at this multiple of the recorded size and area-downscaled, as a
            full-size camera frame is at run time.
        control_rate_hz: expert and recording rate (Hz).
        task: task string of every episode.
        mcap: also write one MCAP bag per episode under ``<out>/mcap``.
        action_noise: std (rad) of a slowly varying random offset added to the arm targets the expert's
            episode executes, while the dataset keeps the expert's own targets (DART, Laskey et al.
            2017): the recorded states then include small departures from the expert's path, labelled
            with the way back.  0 records the expert's own path only.
        expert_kind: ``privileged`` (the task's state-feedback expert reading the simulator's object pose;
            see :func:`r2s2r_eval.learning.demo_expert.privileged_expert`) or ``reference`` (the reference
            policy, perceiving once).
        expert: reference policy parameters (``grasp_offset_m`` also applies to the privileged expert).
        expert_policy: another task's scripted policy as the ``reference`` expert (a policy name or
            ``module:Class``, default parameters); None: the pick-and-place reference policy.  The
            privileged experts do pick-and-place and push.
    """

    world: str = "tabletop-pick-v1"
    variations: Path | None = None
    episodes: int = within(20, ">= 1")
    max_attempts: int | None = None
    seed: int = within(0, ">= 0")
    image_width: int = 96
    image_height: int = 72
    render_scale: int = within(2, "[1, 8]")
    control_rate_hz: float = within(10.0, "(0, 100]")
    task: str = DEFAULT_TASK
    mcap: bool = True
    action_noise: float = within(0.0, "[0, 0.5] rad")
    expert_kind: str = "privileged"
    expert: ReferenceParams = field(default_factory=ReferenceParams)
    expert_policy: str | None = None

    def __post_init__(self) -> None:
        if self.expert_kind not in EXPERT_KINDS:
            raise DemoError(f"expert_kind: must be one of {list(EXPERT_KINDS)}, got {self.expert_kind!r}")
        if self.expert_policy is not None and self.expert_kind != "reference":
            raise DemoError(
                f"expert_policy: {self.expert_policy!r} demonstrates as the 'reference' expert, but "
                f"expert_kind is {self.expert_kind!r} (the privileged experts steer by the simulator's state)"
            )
        check_fields(self, error=DemoError)
        if self.max_attempts is not None and self.max_attempts < self.episodes:
            raise DemoError(f"max_attempts must be >= episodes: got {self.max_attempts} and {self.episodes}")
        for name in ("image_width", "image_height"):
            v = getattr(self, name)
            if v < 8 or v % 2:
                raise DemoError(f"{name}: must be an even number >= 8 (px), got {v}")

    @property
    def attempts(self) -> int:
        """The attempt budget."""
        return self.max_attempts if self.max_attempts is not None else 3 * self.episodes + 5


@dataclass(frozen=True, kw_only=True)
class DemoSummary:
    """What a :func:`collect_demos` call left on disk.

    Attributes:
        root: dataset folder.
        episodes: successful episodes in the dataset.
        frames: frames in the dataset.
        attempts: attempts made (all calls together).
        new_episodes: episodes written by this call.
        reasons: attempt outcome reason -> count (all calls together).
    """

    root: Path
    episodes: int
    frames: int
    attempts: int
    new_episodes: int
    reasons: dict[str, int]


def attempt_seed(seed: int, attempt: int) -> int:
    """World/variation seed of attempt ``attempt`` (a 32-bit draw from ``SeedSequence([seed, attempt])``)."""
    return int(np.random.SeedSequence([seed, attempt]).generate_state(1, dtype=np.uint32)[0])


def downscale(rgb: np.ndarray, width: int, height: int) -> np.ndarray:
    """Area-downscale an RGB frame to ``width x height`` (the BC policy's input preprocessing)."""
    if rgb.shape[1] == width and rgb.shape[0] == height:
        return rgb
    return cv2.resize(rgb, (width, height), interpolation=cv2.INTER_AREA)


def dataset_features(
    *,
    joint_names: tuple[str, ...],
    arm_names: tuple[str, ...],
    width: int,
    height: int,
    variation_names: tuple[str, ...],
    environment_state: bool = True,
) -> dict[str, dict[str, Any]]:
    """The LeRobot ``features`` of a demonstration dataset."""
    features: dict[str, dict[str, Any]] = {
        "observation.images.camera": {
            "dtype": "video",
            "shape": [height, width, 3],
            "names": ["height", "width", "channels"],
        },
        "observation.state": {"dtype": "float32", "shape": [len(joint_names)], "names": list(joint_names)},
        "action": {"dtype": "float32", "shape": [len(arm_names) + 1], "names": [*arm_names, "gripper"]},
    }
    if environment_state:
        # Privileged (sim only): where the task object is, for auxiliary losses or state-based policies.
        features["observation.environment_state"] = {
            "dtype": "float32",
            "shape": [len(ENV_STATE_NAMES)],
            "names": list(ENV_STATE_NAMES),
        }
    if variation_names:
        # Privileged: the variation's unit-cube point (fixed length, unlike the realised parameters, which
        # depend on e.g. the clutter count and are kept per episode in meta/r2s2r_episodes.jsonl).
        features["variation.unit"] = {
            "dtype": "float32",
            "shape": [len(variation_names)],
            "names": list(variation_names),
        }
    return features


class _Recorder(Policy):
    """Wraps the expert; at each step renders a small frame of the runner's camera and records it all."""

    requires = ReferencePolicy.requires

    def __init__(self, expert: Policy, runner: EpisodeRunner, cfg: DemoConfig) -> None:
        super().__init__()
        self.expert = expert
        self.world = runner.world
        self.camera = runner.camera
        self.mjcf_camera = self.world.model.camera(self.world.camera_id(self.camera.name)).name
        self.cfg = cfg
        s = cfg.render_scale
        self.renderer = RgbdRenderer(self.world.model, cfg.image_width * s, cfg.image_height * s)
        self.frames: list[np.ndarray] = []
        self.states: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.stamps: list[float] = []
        self.env_states: list[np.ndarray] = []
        self.object_body = self.world.config.task.object_body if self.world.config.task else None
        self.joint_names: tuple[str, ...] = ()
        self.arm_names: tuple[str, ...] = ()

    def control_rate_hz(self) -> float | None:
        """The expert's rate."""
        return self.cfg.control_rate_hz

    @property
    def done(self) -> bool:
        """The expert's done: the episode ends by the expert's own end (see :attr:`Policy.done`)."""
        return self.expert.done

    def reset(self, info: EpisodeInfo) -> None:
        """Reset the expert and the buffers."""
        self.frames, self.states, self.actions, self.stamps, self.env_states = [], [], [], [], []
        self.arm_names = info.arm_joint_names
        self.expert.reset(info)
        self._noise_rng = np.random.default_rng(np.random.SeedSequence([info.seed, _NOISE_STREAM]))
        self._noise = np.zeros(len(info.arm_joint_names))

    def act(self, observation: Observation) -> Action:
        """The expert's action; records the frame, joint state and action of this step."""
        action = self.expert.act(observation)
        rgb, _ = self.renderer.render(self.world.data, self.mjcf_camera, depth_range=self.camera.depth_range)
        self.frames.append(downscale(rgb, self.cfg.image_width, self.cfg.image_height))
        self.joint_names = observation.joint_names
        self.states.append(observation.joint_positions.astype(np.float32))
        self.actions.append(np.append(action.arm_positions, action.gripper).astype(np.float32))
        self.stamps.append(observation.stamp)
        self.env_states.append(self._environment_state())
        if self.cfg.action_noise > 0:
            # AR(1) offset with stationary std action_noise and a ~1 s correlation time at 10 Hz.
            a = 0.9
            sigma = self.cfg.action_noise * math.sqrt(1 - a * a)
            self._noise = a * self._noise + self._noise_rng.normal(0.0, sigma, self._noise.shape)
            return dataclasses.replace(action, arm_positions=action.arm_positions + self._noise)
        return action

    def _environment_state(self) -> np.ndarray:
        if self.object_body is None:
            return np.full(len(ENV_STATE_NAMES), np.nan, np.float32)
        return object_state(self.world, self.object_body)


def object_state(world: Any, body: str) -> np.ndarray:
    """The task object's position and quarter-turn-symmetric yaw (see :data:`ENV_STATE_NAMES`)."""
    pos, quat = world.body_pose(body)
    w, x, y, z = quat
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.array([*pos, math.cos(4 * yaw), math.sin(4 * yaw)], np.float32)


def _read_attempts(root: Path) -> list[dict[str, Any]]:
    path = root / ATTEMPTS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_mcap(path: Path, rec: _Recorder, cfg: DemoConfig, extra: dict[str, Any]) -> None:
    """One episode as a rosbag2 MCAP bag on the interface topics (small RGB on the colour topic)."""
    iface = load_interface()
    cam = rec.camera.name
    keys = {"joint_states": None, "arm_command": None, "gripper_command": None, "color_image": cam}
    with BagWriter(path) as bag:
        msgs = BagMessages(bag)
        for key, camera in keys.items():
            msgs.add_topic(key, iface.topic(key, camera), iface.topic_spec(key).type)
        msgs.add_topic("info", "/r2s2r/demo_info", "std_msgs/msg/String")
        msgs.string("info", 0, json.dumps({"task": cfg.task, **extra}, sort_keys=True))
        n_arm = len(rec.arm_names)
        for stamp, frame, state, action in zip(rec.stamps, rec.frames, rec.states, rec.actions, strict=True):
            t_ns = round(stamp * 1e9)
            n = len(state)
            msgs.joint_state(t_ns, rec.joint_names, state, np.zeros(n), np.zeros(n))
            msgs.image("color_image", t_ns, rec.camera.frame_id, frame, "rgb8")
            msgs.array("arm_command", t_ns, action[:n_arm])
            msgs.array("gripper_command", t_ns, action[n_arm:])


def _open_dataset(root: Path) -> LeRobotV3Writer | None:
    """A writer that appends to the dataset already at ``root`` (its own fps and features), or None.

    Resuming keeps the schema the dataset was started with, not the current config's.
    """
    if not (root / "meta/info.json").exists():
        return None
    info = read_info(root)
    return LeRobotV3Writer(
        root,
        fps=info["fps"],
        features={k: v for k, v in info["features"].items() if k not in INDEX_FEATURES},
        robot_type=info.get("robot_type") or "arm6",
    )


def _run_attempt(
    cfg: DemoConfig, folder: Path, attempt: int, seed: int, variation: Variation | None, reference: Policy
) -> tuple[EpisodeResult, _Recorder]:
    """Run one expert episode in a fresh world under the recorder; its result and the recording.

    The world is built per attempt (its variation changes the model), so the privileged expert, which
    reads that world's state, is built per attempt too; the reference expert is shared.
    """
    with EpisodeRunner(folder, variation=variation) as runner:
        if runner.world.gripper_command_range is None:
            raise DemoError(f"world {cfg.world!r} has no gripper; the demonstrations need one")
        expert: Policy = (
            privileged_expert(runner.world, grasp_offset_m=cfg.expert.grasp_offset_m)
            if cfg.expert_kind == "privileged"
            else reference
        )
        rec = _Recorder(expert, runner, cfg)
        with rec.renderer:
            result = runner.run(
                rec,
                seed,
                episode_index=attempt,
                control_rate_hz=cfg.control_rate_hz,
                camera_rate_hz=_PICK_EXPERT_CAMERA_RATE_HZ if cfg.expert_policy is None else None,
            )
    return result, rec


def _keep_episode(
    root: Path,
    writer: LeRobotV3Writer,
    rec: _Recorder,
    cfg: DemoConfig,
    extra: dict[str, Any],
    variation: Variation | None,
) -> int:
    """Append a successful episode to the dataset (and its bag under ``mcap/``); its episode index.

    The bag is written into ``mcap/.partial`` and renamed only once the episode is in the dataset, so a
    crash leaves no bag without its episode.
    """
    mcap_root = root / "mcap"
    columns = {"observation.state": np.stack(rec.states), "action": np.stack(rec.actions)}
    if "observation.environment_state" in writer.features:  # datasets from before it existed: not
        columns["observation.environment_state"] = np.stack(rec.env_states)
    if variation is not None:
        columns["variation.unit"] = np.tile(np.asarray(variation.unit, np.float32), (len(rec.states), 1))
    bag_tmp = mcap_root / ".partial" / f"episode_{writer.num_episodes:06d}"
    if cfg.mcap:
        _write_mcap(bag_tmp, rec, cfg, extra)
    index = writer.add_episode(
        EpisodeData(
            task=cfg.task,
            columns=columns,
            videos={"observation.images.camera": np.stack(rec.frames)},
            extra=extra,
        )
    )
    if cfg.mcap:
        bag_tmp.rename(mcap_root / f"episode_{index:06d}")
        bag_tmp.parent.rmdir()
    return index


def collect_demos(
    out: str | Path, cfg: DemoConfig, *, progress: Callable[[int, int], None] | None = None
) -> DemoSummary:
    """Collect ``cfg.episodes`` successful expert episodes into the dataset at ``out`` (resumes it).

    Args:
        out: dataset folder (created; an existing one written with the same schema is resumed).
        cfg: what to record.
        progress: called with ``(episodes kept, attempts made)`` after each attempt.

    Raises:
        DemoError: the world has no gripper; VariationError / WorldError for a bad world or config.
        DatasetError: ``out`` holds a dataset with another schema.
    """
    root = Path(out)
    vcfg = load_variation_config(cfg.variations) if cfg.variations is not None else None
    var_names = dimension_names(vcfg) if vcfg is not None else ()
    folder = world_path(cfg.world)
    attempts = _read_attempts(root)
    writer = _open_dataset(root)
    done = {int(a["attempt"]) for a in attempts}
    done |= {int(e["attempt"]) for e in (writer.episodes if writer else []) if "attempt" in e}
    next_attempt = max(done) + 1 if done else 0
    kept = writer.num_episodes if writer else 0
    new = 0
    reasons: dict[str, int] = {}
    for a in attempts:
        reasons[a["reason"]] = reasons.get(a["reason"], 0) + 1
    # A bag left half-written by a crash is this tool's own output: drop it.
    if (root / "mcap/.partial").is_dir():
        shutil.rmtree(root / "mcap/.partial")
    root.mkdir(parents=True, exist_ok=True)
    reference = ReferencePolicy(cfg.expert) if cfg.expert_policy is None else load_policy(cfg.expert_policy)
    attempt = next_attempt
    try:
        while kept < cfg.episodes and attempt < cfg.attempts:
            seed = attempt_seed(cfg.seed, attempt)
            variation = sample_variation(vcfg, seed) if vcfg is not None else None
            result, rec = _run_attempt(cfg, folder, attempt, seed, variation, reference)
            reasons[result.reason] = reasons.get(result.reason, 0) + 1
            record: dict[str, Any] = {
                "attempt": attempt,
                "seed": seed,
                "success": result.success,
                "reason": result.reason,
                "steps": result.steps,
            }
            if result.success and rec.frames:
                if writer is None:
                    writer = LeRobotV3Writer(
                        root,
                        fps=cfg.control_rate_hz,
                        features=dataset_features(
                            joint_names=rec.joint_names,
                            arm_names=rec.arm_names,
                            width=cfg.image_width,
                            height=cfg.image_height,
                            variation_names=var_names,
                        ),
                    )
                extra = {
                    "attempt": attempt,
                    "seed": seed,
                    "world_id": result.world_id,
                    "world_hash": result.world_hash,
                    "expert": cfg.expert_kind,
                    "variation": dict(variation.params) if variation is not None else None,
                }
                record["episode_index"] = _keep_episode(root, writer, rec, cfg, extra, variation)
                kept += 1
                new += 1
            (root / ATTEMPTS_FILE).parent.mkdir(parents=True, exist_ok=True)  # no episode kept yet
            with (root / ATTEMPTS_FILE).open("a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            attempt += 1
            if progress is not None:
                progress(kept, attempt)
    finally:
        # A v3.0 dataset's files are complete only once finalized: on every exit, an interrupt included.
        if writer is not None:
            writer.close()
    if writer is None:
        raise DemoError(
            f"{cfg.world}: no successful episode of the {cfg.expert_kind} expert in {attempt} attempts "
            f"(outcomes: {reasons})"
        )
    return DemoSummary(
        root=root,
        episodes=writer.num_episodes,
        frames=writer.total_frames,
        attempts=attempt,
        new_episodes=new,
        reasons=reasons,
    )
