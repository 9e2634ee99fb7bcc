"""Sim-to-"real" transfer of the BC policy: demos -> train -> evaluate on the emulated hardware and in sim.

    r2s2r transfer --out out/transfer [--task pick|push|stack|drawer] [--small]

The task (:mod:`r2s2r_eval.studies.task_studies`, default ``pick``) gives the bundled world, its variation
defaults, real2sim's template and the reference row's policy.  Ablations (each: demonstrations by the
privileged state-feedback expert of the task (:func:`r2s2r_eval.learning.demo_expert.privileged_expert`:
pick-and-place or push), or by the task's reference policy with ``--expert reference``; then ``r2s2r train``):

* ``no_variation``: the bundled world (e.g. ``tabletop-pick-v1``) without variations (object pose from
  the seed);
* ``six_axes``: the bundled world with the six variation axes of its variation defaults;
* ``real2sim``: the world identified by ``r2s2r real2sim`` from a capture of the emulated hardware (the
  capture procedure only: ChArUco views, a scene scan and an excitation, no task demonstration), with the
  six axes (colour targets renamed to the reconstructed geoms).

Each policy runs ``--real-episodes`` episodes on the emulated hardware (default profile: never seen in
training), as captured and again with an operator's changes between trials (object pose, lighting,
clutter), and ``--sim-episodes`` in the bundled world with variations and in its own training world and
variations (held-out seeds), plus the expert as a reference row.  Success rates get 95 % Wilson
intervals.  Every stage is skipped when its output exists, so a rerun with the same options resumes; one
with other options (or another profile) is refused rather than mixed in.  Writes ``report.json`` and
``report.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.progress import Progress

from r2s2r_eval.cli.common import Subcommand, bad_input
from r2s2r_eval.learning.demos import DemoConfig, DemoError
from r2s2r_eval.learning.lerobot_v3 import validate_v3_dataset
from r2s2r_eval.learning.perception_frames import PerceptionFramesConfig
from r2s2r_eval.learning.train import TrainConfig, train
from r2s2r_eval.learning.train_data import LEARNER_DEFAULTS
from r2s2r_eval.policies.bc.config import LEARNERS
from r2s2r_eval.studies.task_studies import TASK_STUDIES, TaskStudy, task_study
from r2s2r_eval.studies.transfer_data import collect_sharded, render_sharded
from r2s2r_eval.studies.transfer_eval import evaluate_policy
from r2s2r_eval.studies.transfer_report import format_report
from r2s2r_eval.studies.transfer_worlds import make_real2sim_world, real2sim_variations

__all__ = [
    "COMMAND",
    "ABLATIONS",
    "StudyFolderError",
    "TransferConfig",
    "cmd_transfer",
    "make_real2sim_world",
    "register",
    "run_transfer",
]

DEFAULT_PROFILE = profile_path()
ABLATIONS = ("no_variation", "six_axes", "real2sim")
# Tasks with a privileged expert (see :func:`~r2s2r_eval.learning.demo_expert.privileged_expert`).
PRIVILEGED_TASKS = ("pick", "push")


@dataclass(frozen=True, kw_only=True)
class TransferConfig:
    """Sizes and recipe of a transfer run (``--small``: the CI-sized one).

    The field defaults are pick's; :func:`task_config` gives another task's defaults (its expert and the
    recipe measured on it).

    Attributes:
        demos: successful demonstrations per ablation, split over ``workers`` dataset shards.
        expert: the demonstrating expert (``privileged`` or ``reference``; see :class:`DemoConfig`).
        action_noise: DART noise of the demonstrations (rad; see
            :class:`~r2s2r_eval.learning.demos.DemoConfig`).
        perception_worlds, perception_per_world: still frames for the object-state head per ablation
            (:mod:`r2s2r_eval.learning.perception_frames`), in the ablation's world and variations, ``worlds``
            split over ``workers`` shards; 0 worlds: none.
        learner, steps, lr, chunk, aux_weight, state_noise, channels, shift_px, time_input, head_features,
            teacher_forcing_m: training (see :class:`~r2s2r_eval.learning.train.TrainConfig`).
        real_episodes, sim_episodes: evaluation episodes per policy on the emulated hardware / in each sim
            (the bundled world with the six axes, and the policy's own training world and variations).
        max_steps: control steps before an evaluation episode is cut off.
        seed: base seed; shard ``k`` of the demonstrations uses ``100 * (seed + 1) + k``.
        workers: processes for demonstrations and evaluations (each with one torch thread).
        threads: torch CPU threads for training.
        task: the studied task (a :data:`~r2s2r_eval.studies.task_studies.TASK_STUDIES` name).
        world: the task's world when not its bundled one (a folder, e.g. one ``r2s2r world new`` wrote for
            another arm): the training, evaluation and real2sim template world, its own variations.
    """

    demos: int = 160
    expert: str = "privileged"
    action_noise: float = 0.02
    perception_worlds: int = 240
    perception_per_world: int = 20
    learner: str = "cnn"
    steps: int = 6000
    lr: float = 1e-3
    chunk: int = 8
    aux_weight: float = 1.0
    state_noise: float = 0.0
    channels: tuple[int, ...] = (32, 32, 64, 64)
    shift_px: int = 0
    time_input: bool = False
    head_features: bool = False
    teacher_forcing_m: float = 0.01
    real_episodes: int = 50
    sim_episodes: int = 20
    max_steps: int = 250
    seed: int = 0
    ablations: tuple[str, ...] = ABLATIONS
    reference_row: bool = True
    workers: int = 2
    threads: int = 2
    task: str = "pick"
    world: str | None = None

    def __post_init__(self) -> None:
        study = self.study  # ValueError naming the known tasks, or the world at fault
        if self.expert == "privileged" and study.task not in PRIVILEGED_TASKS:
            raise ValueError(
                f"task {self.task!r}: the privileged experts demonstrate {' and '.join(PRIVILEGED_TASKS)} "
                "only; use expert 'reference' (the task's reference policy)"
            )

    @property
    def study(self) -> TaskStudy:
        """The task's study, in :attr:`world` where one is given."""
        study = task_study(self.task)
        return study if self.world is None else study.on_world(self.world)


SMALL = TransferConfig(
    demos=2,
    steps=20,
    real_episodes=1,
    sim_episodes=1,
    max_steps=60,
    reference_row=False,
    workers=1,
    channels=(16, 32, 32),
    perception_worlds=2,
    perception_per_world=10,
)


def task_config(task: str, *, small: bool = False) -> TransferConfig:
    """The study's defaults for ``task``: pick's, with the task's own expert and recipe over them.

    With ``small`` the CI sizes of :data:`SMALL` win over the task's (a CI run stays tiny).

    Raises:
        ValueError: an unknown task, naming the known ones.
    """
    base = SMALL if small else TransferConfig()
    sized = {
        f.name for f in fields(TransferConfig) if getattr(SMALL, f.name) != getattr(TransferConfig(), f.name)
    }
    own = {k: v for k, v in task_study(task).transfer.items() if not (small and k in sized)}
    return replace(base, task=task, **own)


class StudyFolderError(ValueError):
    """The output folder holds a study run with other options: resuming would mix the two, so we refuse."""


def _resumable(path: Path, new: dict[str, Any]) -> dict[str, Any]:
    """The report at ``path`` to resume, if it was written with ``new``'s options and profile.

    Its demonstrations, checkpoints and evaluations belong to those options; they are never overwritten.

    Raises:
        StudyFolderError: another run's report (naming each option that differs), or not a report.
    """
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        was = {**old["config"], "profile": old["profile"]}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise StudyFolderError(f"{path}: not a transfer study report ({err}); choose another --out") from None
    now = {**new["config"], "profile": new["profile"]}
    # An option a report predates was at its default then (the learner was the CNN before there was a choice).
    defaults = {f.name: f.default for f in fields(TransferConfig)}
    was = {**{k: defaults[k] for k in now.keys() - was.keys() if k in defaults}, **was}
    changed = [
        f"{k}: {was.get(k)!r} there, {now.get(k)!r} now"
        for k in sorted(was.keys() | now.keys())
        if was.get(k) != now.get(k)
    ]
    if changed:
        raise StudyFolderError(
            f"{path}: written by a run with other options ({'; '.join(changed)}); "
            "rerun with the same options to resume it, or choose another --out"
        )
    return dict(old)


class _Run:
    """One run of the study: its report, saved after every stage so that a rerun resumes where it stopped.

    Each stage fills in one key of the report; a stage whose key is there already is skipped.
    """

    def __init__(
        self, out: Path, cfg: TransferConfig, profile: Path, log: Callable[[str], None], *, quiet: bool
    ) -> None:
        self.out, self.cfg, self.profile, self.log, self.quiet = out, cfg, profile, log, quiet
        report: dict[str, Any] = {
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.__dict__.items()},
            "profile": str(profile),
            "ablations": {},
        }
        self.report_path = out / "report.json"
        if self.report_path.is_file():
            report = _resumable(self.report_path, report)
        self.report = report
        self.timings = report.setdefault("wall_s", {})
        # Every evaluation, of a trained policy or the reference expert, runs under the same limits.
        self._evaluate = functools.partial(
            evaluate_policy, max_steps=cfg.max_steps, profile=profile, workers=cfg.workers, log=log
        )
        self.study = cfg.study

    def evaluate(self, label: str, spec: tuple[str, dict[str, Any]], **kw: Any) -> dict[str, Any]:
        """One evaluation under the study's limits, its progress shown as ``label`` unless quiet."""
        return self._evaluate(spec, progress_label=None if self.quiet else label, **kw)

    def save(self) -> None:
        """Write ``report.json`` and its Markdown table ``report.md``."""
        self.report_path.write_text(json.dumps(self.report, indent=2), encoding="utf-8")
        (self.out / "report.md").write_text(format_report(self.report), encoding="utf-8")

    @contextlib.contextmanager
    def stage(self, entry: dict[str, Any], key: str, what: str) -> Iterator[dict[str, Any]]:
        """One resumable stage: say ``what``, then store what it fills in, with its wall time, and save."""
        self.log(what)
        t0 = time.perf_counter()
        result: dict[str, Any] = {}
        yield result
        entry[key] = {**result, "wall_s": time.perf_counter() - t0}
        self.save()

    def worlds(self) -> dict[str, tuple[str, Path | None]]:
        """The training world and variations of each ablation; the real2sim one is identified first."""
        study = self.study
        worlds: dict[str, tuple[str, Path | None]] = {
            "no_variation": (study.world, None),
            "six_axes": (study.world, study.variations),
        }
        if "real2sim" in self.cfg.ablations:
            t0 = time.perf_counter()
            world = make_real2sim_world(
                self.out / "real2sim",
                self.profile,
                progress=self.log,
                template=study.world,
                progress_bars=not self.quiet,
            )
            own = real2sim_variations(world, self.out / "real2sim" / "variations.yaml", base=study.variations)
            worlds["real2sim"] = (str(world), own)
            self.timings.setdefault("real2sim", time.perf_counter() - t0)
        return worlds

    def demonstrations(self, name: str, entry: dict[str, Any], world: str, variations: Path | None) -> None:
        """Record the ablation's demonstrations as dataset shards and validate them."""
        cfg, study = self.cfg, self.study
        what = f"[{name}] demonstrations: {cfg.demos} in {world} ({cfg.workers} shards)"
        with self.stage(entry, "dataset", what) as dataset:
            demo_cfg = DemoConfig(
                world=world,
                variations=variations,
                episodes=cfg.demos,
                action_noise=cfg.action_noise,
                expert_kind=cfg.expert,
                expert_policy=(
                    None if cfg.expert == "privileged" or study.task == "pick" else study.family[0].name
                ),
                mcap=False,
            )
            data = self.out / "demos" / name
            label = None if self.quiet else f"[{name}] demos"
            shards = collect_sharded(
                data, demo_cfg, seed=cfg.seed, workers=cfg.workers, log=self.log, progress_label=label
            )
            infos = [json.loads((d / "meta/info.json").read_text(encoding="utf-8")) for d in shards]
            problems = [p for d in shards for p in validate_v3_dataset(d)]
            dataset["paths"] = [str(d) for d in shards]
            dataset["episodes"] = sum(i["total_episodes"] for i in infos)
            dataset["frames"] = sum(i["total_frames"] for i in infos)
            attempts = [d / "meta/r2s2r_attempts.jsonl" for d in shards]
            dataset["attempts"] = sum(len(a.read_text(encoding="utf-8").splitlines()) for a in attempts)
            dataset["action_noise"] = cfg.action_noise
            dataset["valid"] = not problems
            dataset["problems"] = problems[:5]

    def perception(self, name: str, entry: dict[str, Any], world: str, variations: Path | None) -> None:
        """Render the ablation's still frames for the object-state head, in its world and variations."""
        cfg = self.cfg
        what = f"[{name}] perception frames: {cfg.perception_worlds} worlds x {cfg.perception_per_world}"
        with self.stage(entry, "perception", what) as perception:
            pf_cfg = PerceptionFramesConfig(
                world=world,
                variations=variations,
                worlds=cfg.perception_worlds,
                per_world=cfg.perception_per_world,
            )
            pf_dir = self.out / "perception" / name
            label = None if self.quiet else f"[{name}] perception"
            pf = render_sharded(
                pf_dir, pf_cfg, seed=cfg.seed, workers=cfg.workers, log=self.log, progress_label=label
            )
            perception["paths"] = [str(d) for d in pf]
            perception["frames"] = cfg.perception_worlds * cfg.perception_per_world

    def training(self, name: str, entry: dict[str, Any], ckpt: Path) -> None:
        """Train the ablation's BC policy on its demonstrations (and perception frames) into ``ckpt``."""
        cfg = self.cfg
        self.log(f"[{name}] training: {cfg.steps} steps")
        if not (ckpt / "policy.pt").exists():  # an earlier run's checkpoint is reused (resuming)
            with Progress(cfg.steps, f"[{name}] train", "step", quiet=self.quiet) as bar:
                train(
                    [Path(p) for p in entry["dataset"]["paths"]],
                    ckpt,
                    TrainConfig(
                        learner=cfg.learner,
                        steps=cfg.steps,
                        lr=cfg.lr,
                        seed=cfg.seed,
                        num_threads=cfg.threads,
                        chunk=cfg.chunk,
                        aux_weight=cfg.aux_weight,
                        state_noise=cfg.state_noise,
                        channels=cfg.channels,
                        shift_px=cfg.shift_px,
                        time_input=cfg.time_input,
                        head_features=cfg.head_features,
                        teacher_forcing_m=cfg.teacher_forcing_m,
                        perception_frames=tuple(entry.get("perception", {}).get("paths", ())),
                    ),
                    progress=lambda k, loss: bar.set(k, loss=f"{loss:.4f}"),
                )
        entry["train"] = json.loads((ckpt / "config.json").read_text(encoding="utf-8"))["result"]
        self.save()

    def evaluations(
        self, name: str, entry: dict[str, Any], world: str, variations: Path | None, ckpt: Path
    ) -> None:
        """Score the ablation's policy wherever it has not been scored yet.

        Where: the emulated hardware as captured, and with an operator's changes between trials (object
        pose, lighting, clutter, as in `make closed-loop`); the bundled world with the six axes (one
        yardstick for every ablation); and its own training world and variations on held-out seeds (what
        sim alone would have promised it).  An evaluation identical to one already made is not rerun.
        """
        cfg, study = self.cfg, self.study
        evaluations = (
            ("real", "real", study.world, None, cfg.real_episodes),
            ("real_operator", "real", study.world, study.variations, cfg.real_episodes),
            ("sim", "sim", study.world, study.variations, cfg.sim_episodes),
            ("sim_own", "sim", world, variations, cfg.sim_episodes),
        )
        for key, where, eval_world, eval_variations, n in evaluations:
            if key in entry or n == 0:
                continue
            same = next(
                (
                    k
                    for k, w, ew, ev, _ in evaluations
                    if k != key and k in entry and w == where and (ew, ev) == (eval_world, eval_variations)
                ),
                None,
            )
            if same is not None:
                entry[key] = {**entry[same], "same_as": same}
                self.save()
                continue
            self.log(f"[{name}] evaluation {key}: {n} episodes in {eval_world}")
            name_of = "bc" if cfg.learner == "cnn" else cfg.learner
            bc = (name_of, {"checkpoint": str(ckpt), "num_threads": 1 if cfg.workers > 1 else cfg.threads})
            entry[key] = self.evaluate(
                f"[{name}] {key}", bc, where=where, world=str(eval_world), n=n, variations=eval_variations
            )
            self.save()

    def reference_row(self) -> None:
        """Score the task's reference expert on the hardware and in the bundled world, for comparison."""
        cfg, study = self.cfg, self.study
        entry = self.report.setdefault("reference", {})
        for key, where, eval_variations, n in (
            ("real", "real", None, cfg.real_episodes),
            ("real_operator", "real", study.variations, cfg.real_episodes),
            ("sim", "sim", study.variations, cfg.sim_episodes),
        ):
            if key not in entry and n:
                self.log(f"[reference expert] evaluation {key}: {n} episodes")
                expert = (study.family[0].name, dict(study.family[0].params))
                entry[key] = self.evaluate(
                    f"[reference expert] {key}",
                    expert,
                    where=where,
                    world=study.world,
                    n=n,
                    variations=eval_variations,
                )
                self.save()


def run_transfer(
    out: Path,
    cfg: TransferConfig,
    *,
    profile: Path = DEFAULT_PROFILE,
    log: Callable[[str], None] = print,
    quiet: bool = False,
) -> dict[str, Any]:
    """Run (or resume) the whole study; returns the report also written to ``out/report.json``.

    Unless ``quiet``, the demonstrations, the training and each evaluation show their progress with an
    ETA on stderr.

    Raises:
        StudyFolderError: ``out`` holds a study run with other options or another profile.
    """
    out.mkdir(parents=True, exist_ok=True)
    run = _Run(out, cfg, profile, log, quiet=quiet)
    worlds = run.worlds()
    for name in cfg.ablations:
        world, variations = worlds[name]
        entry = run.report["ablations"].setdefault(name, {"world": world, "variations": str(variations)})
        if "dataset" not in entry:
            run.demonstrations(name, entry, world, variations)
        if cfg.perception_worlds and "perception" not in entry:
            run.perception(name, entry, world, variations)
        ckpt = out / "policies" / name
        if "train" not in entry:
            run.training(name, entry, ckpt)
        run.evaluations(name, entry, world, variations, ckpt)
    if cfg.reference_row:
        run.reference_row()
    run.save()
    return run.report


def _add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", type=Path, default=Path("out/transfer"), help="output folder (resumed)")
    ap.add_argument("--small", action="store_true", help="tiny sizes (CI smoke run)")
    ap.add_argument(
        "--task",
        default="pick",
        choices=sorted(TASK_STUDIES),
        help="task studied: its bundled world, variations and reference policy (default pick; the others "
        "need --expert reference)",
    )
    ap.add_argument(
        "--world",
        default=None,
        help="the task's world: a bundled id or a folder, e.g. one that r2s2r world new wrote for your arm "
        "(default: the task's bundled world); demonstrations, training and evaluations use it and its own "
        "variations.yaml, and --profile must be written for it",
    )
    ap.add_argument("--demos", type=int, help="demonstrations per ablation")
    ap.add_argument("--steps", type=int, help="training steps per ablation")
    ap.add_argument("--real-episodes", type=int, help="episodes on the emulated hardware per policy")
    ap.add_argument("--sim-episodes", type=int, help="sim episodes per policy")
    ap.add_argument("--max-steps", type=int, help="control steps before an evaluation episode is cut off")
    ap.add_argument("--threads", type=int, help="torch CPU threads for training")
    ap.add_argument("--workers", type=int, help="processes for demonstrations and evaluations")
    ap.add_argument(
        "--learner",
        choices=LEARNERS,
        help="the network (default cnn); act and diffusion train without the object-state head and "
        "perception frames, at their own learning rate and chunk (see `r2s2r train --help`)",
    )
    ap.add_argument("--chunk", type=int, help="actions predicted per step (action chunking)")
    ap.add_argument("--action-noise", type=float, help="DART noise of the demonstrations (rad)")
    ap.add_argument(
        "--expert",
        choices=("privileged", "reference"),
        help="the demonstrating expert (default: privileged for pick and push, else the task's reference)",
    )
    ap.add_argument(
        "--time-input",
        action=argparse.BooleanOptionalAction,
        help="give the network the episode time (default: the task's recipe; on for the drawer)",
    )
    ap.add_argument(
        "--head-features",
        action=argparse.BooleanOptionalAction,
        help="the action head reads the image features, not only the estimated object state "
        "(default: the task's recipe; on for the drawer)",
    )
    ap.add_argument("--no-reference", action="store_true", help="skip the reference expert's row")
    ap.add_argument("--ablation", action="append", choices=ABLATIONS, help="run only these (repeatable)")
    ap.add_argument(
        "--profile",
        type=profile_path,
        default=None,
        help="hardware profile of the emulator: realistic (default), ideal or a YAML path; one written for "
        "--world where it is given",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bars")


def cmd_transfer(ns: argparse.Namespace) -> int:
    """Run (or resume) the transfer study of ``ns``; 0 when it finished, 2 on bad input."""
    try:
        base = task_config(ns.task, small=ns.small)
    except ValueError as err:
        return bad_input("transfer", err)
    over = {
        k: v
        for k, v in {
            "demos": ns.demos,
            "steps": ns.steps,
            "real_episodes": ns.real_episodes,
            "sim_episodes": ns.sim_episodes,
            "max_steps": ns.max_steps,
            "threads": ns.threads,
            "workers": ns.workers,
            "chunk": ns.chunk,
            "action_noise": ns.action_noise,
            "expert": ns.expert,
            "time_input": ns.time_input,
            "head_features": ns.head_features,
            "world": ns.world,
        }.items()
        if v is not None
    }
    if ns.head_features:
        over["teacher_forcing_m"] = 0.0  # teacher forcing trains a head that reads only the object state
    if ns.learner not in (None, "cnn"):
        # lerobot's learners read the image directly: no object-state head, so no perception frames.
        defaults = LEARNER_DEFAULTS[ns.learner]
        over.update(
            learner=ns.learner,
            lr=defaults["lr"],
            chunk=ns.chunk or defaults["chunk"],
            aux_weight=0.0,
            head_features=True,
            teacher_forcing_m=0.0,
            perception_worlds=0,
        )
    if ns.no_reference:
        over["reference_row"] = False
    if ns.ablation:
        over["ablations"] = tuple(ns.ablation)
    try:
        cfg = replace(base, **over)
        if cfg.world is not None and cfg.study is not task_study(cfg.task) and ns.profile is None:
            raise ValueError(
                f"--world {ns.world}: give --profile, a hardware profile written for it (`r2s2r profile new`)"
            )
    except ValueError as err:
        return bad_input("transfer", err)
    profile = DEFAULT_PROFILE if ns.profile is None else ns.profile
    t0 = time.perf_counter()
    try:
        report = run_transfer(
            ns.out, cfg, profile=profile, log=lambda m: print(m, flush=True), quiet=ns.quiet
        )
    except (StudyFolderError, DemoError) as err:  # a folder of another run; an expert that never succeeds
        return bad_input("transfer", err)
    print(format_report(report))
    print(f"wrote {ns.out / 'report.json'} ({time.perf_counter() - t0:.0f} s)")
    return 0


_HELP = "demonstrations, behaviour cloning and transfer to the emulated hardware"
COMMAND = Subcommand("transfer", _HELP, __doc__, _add_arguments, cmd_transfer)
register = COMMAND.register
