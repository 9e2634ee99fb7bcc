"""Identification output: the fit's result, and the fitted MJCF, summary and HTML report on disk."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import mujoco
import yaml
from mujoco import sysid
from r2s2r_sim.world.compose import COMMAND_DELAY_NUMERIC

from r2s2r_capture.errors import IdentificationError, refuse_existing

__all__ = ["DELAY_NUMERIC", "IdentificationResult", "quiet_toolbox", "write_identification"]

# Name of the MJCF <custom><numeric> that carries the identified command delay (s); SimWorld applies it.
DELAY_NUMERIC = COMMAND_DELAY_NUMERIC


# RMS joint error (rad) below which a recording counts as reproduced exactly (no sensor is this quiet).
_EXACT_RAD = 1e-9


@dataclasses.dataclass(frozen=True)
class IdentificationResult:
    """Fitted parameters and fit quality.

    Attributes:
        nominal: parameter name -> value in the given model (delay: 0).
        fitted: parameter name -> identified value.  Names are ``<joint>/<kind>`` and ``command_delay_s``.
        rms_train_before, rms_train_after: RMS joint position error (rad) on the training part.
        rms_val_before, rms_val_after: the same on the held-out part.
        n_train, n_val: samples in each part.
        wall_s: optimisation wall time (s).
        effort_corrections: joint -> (scale, viscous friction moved from kv to damping, N m s/rad), when
            efforts were recorded.
        std: parameter name -> standard error of the fitted value (its units; ``inf``: the data cannot
            see it), see :mod:`r2s2r_capture.sysid.uncertainty`.
        residual_autocorrelation_time: integrated autocorrelation time of the training residuals
            (samples) by which the errors were widened.
        iterations: optimiser iterations run (-1: unknown).
        stop_reason: why the optimiser stopped, in its words.
    """

    nominal: dict[str, float]
    fitted: dict[str, float]
    rms_train_before: float
    rms_train_after: float
    rms_val_before: float
    rms_val_after: float
    n_train: int
    n_val: int
    wall_s: float
    effort_corrections: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    std: dict[str, float] = dataclasses.field(default_factory=dict)
    residual_autocorrelation_time: float = 1.0
    iterations: int = -1
    stop_reason: str = ""
    # The toolbox objects, for the report and the fitted MJCF: the spec fitted, and ``toolbox`` with the
    # parameters (``params``, ``fitted``), the optimiser's result, the training sequence and residual,
    # the model's path (or XML) and the optimiser's log.
    spec: Any = dataclasses.field(repr=False, compare=False, default=None)
    toolbox: Any = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What makes the fit untrustworthy even though it ran."""
        # Zero iterations on a recording the model already reproduces exactly is a perfect fit, not a stall.
        if self.iterations == 0 and self.rms_train_before > _EXACT_RAD:
            return (
                f"the optimiser stopped after 0 iterations ({self.stop_reason or 'no reason given'}) with "
                f"{self.rms_train_before:.5f} rad RMS joint error: every fitted value is the robot file's; "
                "check that the capture moved every joint and that the robot file's servos track their "
                "commands",
            )
        return ()

    def summary(self) -> str:
        """Human-readable table of the fit."""
        lines = [f"{'parameter':<28}{'nominal':>12}{'fitted':>12}{'std error':>12}"]
        lines += [
            f"{k:<28}{self.nominal[k]:>12.5g}{v:>12.5g}{self.std.get(k, math.nan):>12.3g}"
            for k, v in self.fitted.items()
        ]
        lines.append(
            f"RMS joint error (rad): train {self.rms_train_before:.5f} -> {self.rms_train_after:.5f}, "
            f"validation {self.rms_val_before:.5f} -> {self.rms_val_after:.5f}"
        )
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _finite_or_none(value: float | None) -> float | None:
    """YAML has no portable infinity: an unknown error is written as null."""
    return None if value is None or not math.isfinite(value) else float(value)


@contextlib.contextmanager
def quiet_toolbox() -> Any:
    """Silence toolbox absl warnings that do not apply here (state-only observations, start on bound 0)."""
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        absl_logger.setLevel(level)


def write_identification(
    result: IdentificationResult, out_dir: str | Path, *, report: bool = True
) -> dict[str, Path]:
    """Write the fitted MJCF, a ``sysid.yaml`` summary and the toolbox's HTML report into a new folder.

    Everything is written to a temporary sibling folder first, then moved into place, so a failure leaves
    nothing half-done.

    Returns:
        ``{"mjcf": ..., "summary": ..., "report": ...}`` (no ``report`` if ``report=False``).

    Raises:
        IdentificationError: ``out_dir`` exists.
    """
    out = refuse_existing(out_dir, IdentificationError)
    out.parent.mkdir(parents=True, exist_ok=True)
    ctx = result.toolbox
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary output folder
        model_path: Path = ctx["model_path"]
        model_xml: str | None = ctx.get("model_xml")
        # identified from a spec (a URDF robot's, say): its XML, asset paths resolved from its folder
        spec = (
            mujoco.MjSpec.from_file(str(model_path))
            if model_xml is None
            else mujoco.MjSpec.from_string(model_xml)
        )
        # Keep asset paths valid from the new location: relative ones (no meshdir at all included, as
        # MjSpec.to_xml writes) are relative to the robot's folder, never to the working directory.
        for attr in ("meshdir", "texturedir"):
            value = getattr(spec, attr, "") or ""
            if not Path(value).is_absolute():
                setattr(spec, attr, str((Path(ctx.get("model_dir", model_path.parent)) / value).resolve()))
        sysid.apply_param_modifiers_spec(ctx["fitted"], spec)
        if "command_delay_s" in result.fitted:
            spec.add_numeric(name=DELAY_NUMERIC, data=[result.fitted["command_delay_s"]])
        try:
            spec.compile()
        except ValueError as err:
            raise IdentificationError(f"{model_path}: the identified model does not compile: {err}") from err
        mjcf = tmp / f"{model_path.stem if model_xml is None else 'robot'}_identified.xml"
        mjcf.write_text(spec.to_xml(), encoding="utf-8")
        summary = {
            "model": str(model_path),
            "parameters": {
                k: {"nominal": result.nominal[k], "fitted": v, "std": _finite_or_none(result.std.get(k))}
                for k, v in result.fitted.items()
            },
            "residual_autocorrelation_time": result.residual_autocorrelation_time,
            "rms_joint_error_rad": {
                "train": {"before": result.rms_train_before, "after": result.rms_train_after},
                "validation": {"before": result.rms_val_before, "after": result.rms_val_after},
            },
            "samples": {"train": result.n_train, "validation": result.n_val},
            "effort_corrections": {
                j: {"scale": c, "kv_to_damping": b} for j, (c, b) in result.effort_corrections.items()
            },
            "wall_s": result.wall_s,
            "optimiser": {"iterations": result.iterations, "stop_reason": result.stop_reason},
            "warnings": list(result.warnings),
        }
        (tmp / "sysid.yaml").write_text(yaml.safe_dump(summary, sort_keys=False), encoding="utf-8")
        (tmp / "optimizer.log").write_text(ctx["log"], encoding="utf-8")
        paths = {"mjcf": mjcf, "summary": tmp / "sysid.yaml", "log": tmp / "optimizer.log"}
        if report:
            with quiet_toolbox():
                sysid.default_report(
                    models_sequences=[ctx["train"]],
                    initial_params=ctx["params"],
                    opt_params=ctx["fitted"],
                    residual_fn=ctx["train_fn"],
                    opt_result=ctx["opt_result"],
                    title="r2s2r arm identification",
                    save_path=tmp,
                    generate_videos=False,
                )
            paths["report"] = tmp / "report.html"
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {k: out / p.name for k, p in paths.items()}
