"""Sliding friction from the capture's ``slide`` phase: each flick replayed in the reconstructed world.

The phase (:mod:`r2s2r_capture.procedures.slide`) leaves, per flick, RGB-D views of the task object before and
after and the arm's joint states and commands in between.  The object is located in each view the way the
scene is reconstructed (TSDF, table plane, clusters: the ``locate`` callable real2sim hands in), so a
bias of the segmentation cancels in the displacement.  Each flick is then replayed in the written world
(:func:`r2s2r_capture.real2sim.resim.replay_commands`: the recorded commands at their times, after the
identified command delay, from the recorded joint state, the object at its seen start) with the friction of
the object's and the table's geoms scaled by one factor, and that factor is fitted so that the replayed
object travels as far along the push as the views show.

What is fitted is an *effective* coefficient: the one at which the simulated world's contact model
(cone, impedance, the object's reconstructed shape) reproduces how far the real object slides, which is
what decides a push.  Its uncertainty follows from the displacement's error (half a TSDF voxel, and the
replay's own roughness: a contact may turn the object a little more or less) over the slope of the
replayed displacement in the log of the factor.  The slide is short (the arm brakes the fingers only a
little faster than friction brakes the object), so one pair of flicks pins the coefficient to about
+-20 %: better than the prior, far from a tribometer.

The friction cone is chosen from the same replays: the fit is made with MuJoCo's elliptic and with its
pyramidal cone, and the world's own cone is kept unless the other one's replays drift sideways clearly
nearer to what the views show (a pyramid's friction differs with direction, so a push under it veers; an
elliptic cone pushes straight).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.errors import BagError, ReconstructionError
from r2s2r_capture.procedures.session import PHASE_TOPIC, topic_names
from r2s2r_capture.procedures.slide import SLIDE_PHASE
from r2s2r_capture.real2sim.frames import camera_topics, depth_m, image_array
from r2s2r_capture.real2sim.resim import replay_commands
from r2s2r_capture.sysid.joint_motion import read_joint_motion

__all__ = ["FlickFit", "SlideEstimate", "estimate_slide", "read_slide", "scale_friction"]

SCALE_BOUNDS = (0.25, 4.0)  # the factor's search range, on the world's written friction
_GRID = 17  # grid points of the search, evenly in ln(scale)
_LOCAL = 2  # grid points on each side of the best one in the line fit
_PREROLL_S = 0.5  # the fingers close and the arm settles before each replay (s)
_MIN_SCALE_SPREAD = 0.05  # narrowest friction variation kept around the fit (relative)
CONES = ("elliptic", "pyramidal")  # the friction cones tried, MuJoCo's two
_CONE_ENUM = {
    "elliptic": int(mujoco.mjtCone.mjCONE_ELLIPTIC),
    "pyramidal": int(mujoco.mjtCone.mjCONE_PYRAMIDAL),
}
_Frames = list[tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass(frozen=True)
class FlickFit:
    """One flick: where the object was seen before and after, and the replay at the fitted friction."""

    speed_m_s: float
    direction: tuple[float, float]
    before_xy: tuple[float, float]
    after_xy: tuple[float, float]
    observed_m: float  # travel along the push seen in the views (m)
    replayed_m: float  # travel in the replay at the fitted friction (m)
    slope_m: float  # d(replayed travel) / d(ln scale) at the fit (m)
    drift_observed_m: float = 0.0  # sideways travel seen, left of the push positive (m)
    drift_replayed_m: float = 0.0  # sideways travel in the replay at the fit, with the chosen cone (m)


@dataclasses.dataclass(frozen=True)
class SlideEstimate:
    """The fitted friction factor and what it rests on.

    Attributes:
        scale: factor on the friction of the task object's and the table's geoms as written.
        scale_std: its standard error (relative: of ``ln scale``).
        friction: the effective sliding coefficient of object on table after scaling (MuJoCo takes the
            larger of the two geoms' coefficients).
        geoms: the geoms scaled.
        flicks: each flick's figures.
        at_bound: the fit stopped at a bound of :data:`SCALE_BOUNDS` (the replay cannot reproduce the
            travel: the note says which way).
        cone: the friction cone whose replays drift sideways as the views show.
        drift_rms: per cone tried, the RMS difference of replayed and seen sideways travel (m).
    """

    scale: float
    scale_std: float
    friction: float
    geoms: tuple[str, ...]
    flicks: tuple[FlickFit, ...]
    at_bound: str | None = None
    cone: str = "elliptic"
    drift_rms: dict[str, float] = dataclasses.field(default_factory=dict)

    def variation_range(self) -> tuple[float, float]:
        """The friction variation left around the fit: +-1.96 standard errors, at least +-5 %."""
        half = max(1.96 * self.scale_std, _MIN_SCALE_SPREAD)
        return (math.exp(-half), math.exp(half))

    def describe(self) -> str:
        """One progress line: the factor, the coefficient, the cone and what each cone's drift missed by."""
        bound = "" if self.at_bound is None else f", at the search bound ({self.at_bound})"
        drift = ", ".join(f"{c} {1000 * v:.0f} mm" for c, v in self.drift_rms.items())
        return (
            f"{len(self.flicks)} flick(s): friction x{self.scale:.3f} (+-{100 * self.scale_std:.1f} %), "
            f"sliding coefficient {self.friction:.3f}{bound}; {self.cone} cone (sideways drift off: {drift})"
        )

    def summary(self) -> dict[str, Any]:
        """Plain values for ``real2sim.yaml``."""
        return {
            "friction_scale": self.scale,
            "friction_scale_std_rel": self.scale_std,
            "sliding_friction": self.friction,
            "geoms": list(self.geoms),
            "at_bound": self.at_bound,
            "cone": self.cone,
            "drift_rms_m": dict(self.drift_rms),
            "flicks": [dataclasses.asdict(f) for f in self.flicks],
        }


@dataclasses.dataclass
class _SlidePhase:
    views: dict[int, _Frames]
    flicks: dict[int, dict[str, Any]]  # marker fields plus t0 / t1 (s, bag clock)


def read_slide(bags: Sequence[str | Path], camera: str = "camera", interface: str = "") -> _SlidePhase | None:
    """The slide phase's views and flick markers, or ``None`` when no bag has one.

    Raises:
        BagError: a flick without views on both sides, or an unreadable bag.
    """
    names = topic_names(camera, interface)
    raw_color, raw_depth = names["color_image"][0], names["depth_image"][0]
    out = _SlidePhase({}, {})
    for bag in bags:
        part: dict[str, Any] | None = None
        pending: np.ndarray | None = None
        with BagReader(bag) as reader:
            color, depth = camera_topics(reader.topics, raw_color, raw_depth)
            for m in reader.messages([PHASE_TOPIC, color, depth]):
                msg = reader.deserialize(m)
                if m.topic == PHASE_TOPIC:
                    mark = json.loads(msg.data)
                    if mark.get("phase") != SLIDE_PHASE:
                        part = None
                        continue
                    part = mark if mark.get("event") == "start" else None
                    if mark.get("part") == "flick":
                        flick = out.flicks.setdefault(int(mark["index"]), {})
                        flick.update(mark)
                        flick["t0" if mark.get("event") == "start" else "t1"] = m.timestamp_ns * 1e-9
                        flick["bag"] = Path(bag)
                    continue
                if part is None or part.get("part") != "view":
                    continue
                img = image_array(msg, f"bag {bag}: {m.topic}")
                if m.topic == color:
                    pending = img
                elif pending is not None:
                    out.views.setdefault(int(part["index"]), []).append((pending, depth_m(img)))
                    pending = None
    if not out.flicks:
        return None
    for k, flick in sorted(out.flicks.items()):
        missing = [i for i in (k, k + 1) if not out.views.get(i)]
        if missing or "t1" not in flick:
            raise BagError(
                f"slide phase: flick {k} lacks {'its end marker' if not missing else f'views {missing}'}; "
                "record the phase whole (r2s2r_capture.procedures.slide)"
            )
    return out


def scale_friction(model: Any, geoms: Sequence[int], base: np.ndarray, scale: float) -> None:
    """Set the ``geoms``' friction (all three coefficients) to ``base * scale`` in a compiled model."""
    model.geom_friction[list(geoms)] = base * scale


def estimate_slide(
    bags: Sequence[str | Path],
    world_dir: str | Path,
    *,
    locate: Callable[[_Frames, np.ndarray], tuple[np.ndarray, float]],
    start_xy: np.ndarray,
    table_geom: str,
    voxel: float,
    camera: str = "camera",
    interface: str = "",
) -> SlideEstimate | None:
    """Fit the friction factor of the world at ``world_dir`` to the capture's flicks (module docstring).

    Args:
        bags: the capture bag(s).
        world_dir: the written world (robot with identified dynamics, reconstructed object and table).
        locate: ``locate(frames, near_xy)``: the task object in RGB-D frames (the object nearest
            ``near_xy``): its xy (m, world) and yaw (rad), as the reconstruction places it.
        start_xy: where the scene phase saw the task object (m).
        table_geom: the table top geom's name in the world.
        voxel: the TSDF voxel (m): the views' position error, for the standard error.
        camera: ROS camera name of the capture's topics.
        interface: topic interface profile or file the bags follow (empty: the default).

    Returns:
        ``None`` when the bags hold no slide phase.

    Raises:
        BagError: an incomplete phase; ReconstructionError: the object not found in a view, or a replay
            that leaves the table.
    """
    phase = read_slide(bags, camera, interface)
    if phase is None:
        return None
    world = SimWorld(world_dir)
    model = world.model
    task = world.config.task
    assert task is not None
    geoms = _friction_geoms(model, task.object_body, table_geom)
    base = model.geom_friction[geoms].copy()
    seen, fits = _seen_flicks(phase, locate, np.asarray(start_xy, dtype=np.float64))

    def ends(scale: float) -> np.ndarray:
        """Each flick's replayed resting xy (F, 2) at friction ``scale``."""
        scale_friction(model, geoms, base, scale)
        return np.array([_replay(world, flick, before, interface) for flick, before, _, _ in fits])

    before_xy = np.array([b[:2] for _, b, _, _ in fits])
    along = np.array([d for *_, d, _ in fits])
    left = along[:, ::-1] * np.array([-1.0, 1.0])  # the push direction turned +90 degrees
    observed = np.array([obs for *_, obs in fits])
    drift_seen = np.array(
        [
            float(np.dot(seen[int(f["index"]) + 1][:2] - b[:2], n))
            for (f, b, _, _), n in zip(fits, left, strict=True)
        ]
    )
    own_cone = int(model.opt.cone)
    try:
        tried = {cone: _fit_scale(model, cone, ends, before_xy, along, observed) for cone in CONES}
    finally:
        model.opt.cone = own_cone
        scale_friction(model, geoms, base, 1.0)
    # Each travel: the difference of two views' centroids of the same object (each fused from thousands of
    # points: about half a voxel), and the replay's own roughness around the line.
    sigma = {c: math.hypot(0.5 * voxel, f.rough) for c, (f, _) in tried.items()}
    drifts = {c: np.sum(moved * left, axis=1) for c, (_, moved) in tried.items()}
    rms = {c: float(np.sqrt(np.mean((drift - drift_seen) ** 2))) for c, drift in drifts.items()}
    own = next(c for c in CONES if _CONE_ENUM[c] == own_cone)
    other = next(c for c in CONES if c != own)
    # The world's own cone stands unless the other one's drift is clearly nearer what the views show.
    cone = other if rms[other] + sigma[other] < rms[own] else own
    fit, moved = tried[cone]
    flicks = []
    for k, ((flick, before, d, obs), g) in enumerate(zip(fits, fit.slope, strict=True)):
        after = seen[int(flick["index"]) + 1]
        flicks.append(
            FlickFit(
                speed_m_s=float(flick["speed_m_s"]),
                direction=(float(d[0]), float(d[1])),
                before_xy=(float(before[0]), float(before[1])),
                after_xy=(float(after[0]), float(after[1])),
                observed_m=obs,
                replayed_m=float(np.dot(moved[k], d)),
                slope_m=float(g),
                drift_observed_m=float(drift_seen[k]),
                drift_replayed_m=float(drifts[cone][k]),
            )
        )
    return SlideEstimate(
        scale=math.exp(fit.log_s),
        scale_std=sigma[cone] / math.sqrt(fit.info) if fit.info > 0 else math.inf,
        friction=float(base[:, 0].max()) * math.exp(fit.log_s),
        geoms=tuple(model.geom(g).name for g in geoms),
        flicks=tuple(flicks),
        at_bound=fit.at_bound,
        cone=cone,
        drift_rms=rms,
    )


def _friction_geoms(model: Any, object_body: str, table_geom: str) -> list[int]:
    """The geoms whose friction is fitted: the task object's touching geoms and the table top."""
    body = model.body(object_body).id
    touching = lambda g: bool(model.geom_contype[g] | model.geom_conaffinity[g])  # noqa: E731
    return [g for g in range(model.ngeom) if model.geom_bodyid[g] == body and touching(g)] + [
        model.geom(table_geom).id
    ]


def _seen_flicks(
    phase: _SlidePhase,
    locate: Callable[[_Frames, np.ndarray], tuple[np.ndarray, float]],
    start_xy: np.ndarray,
) -> tuple[dict[int, np.ndarray], list[tuple[dict[str, Any], np.ndarray, np.ndarray, float]]]:
    """The object's pose (x, y, yaw) in each view, and each flick's marker, start, direction and travel seen.

    A flick's entry: its marker, the pose before it, its unit push direction and the travel along that
    direction between the views before and after it.  Each view is searched near where the object should be:
    the scene's place for the first, where the fingers left it for the others (the slide carries it on from
    there).
    """

    def pose(frames: _Frames, near: np.ndarray) -> np.ndarray:
        xy, yaw = locate(frames, near)
        return np.array([*np.asarray(xy, dtype=np.float64)[:2], float(yaw)])

    seen = {0: pose(phase.views[0], start_xy)}
    fits: list[tuple[dict[str, Any], np.ndarray, np.ndarray, float]] = []
    for k, flick in sorted(phase.flicks.items()):
        d = np.asarray(flick["direction"], dtype=np.float64)[:2]
        d = d / np.linalg.norm(d)
        if k + 1 not in seen:
            seen[k + 1] = pose(phase.views[k + 1], seen[k][:2] + d * float(flick.get("push_m", 0.05)))
        observed = float(np.dot(seen[k + 1][:2] - seen[k][:2], d))
        fits.append((flick, seen[k], d, observed))
    return seen, fits


def _fit_scale(
    model: Any,
    cone: str,
    ends: Callable[[float], np.ndarray],
    before_xy: np.ndarray,
    along: np.ndarray,
    observed: np.ndarray,
) -> tuple[_LineFit, np.ndarray]:
    """The friction factor fitted under ``cone``, and each flick's replayed displacement (F, 2) at it.

    Contacts make the replayed travel a rough function of friction (a replay may turn the object a few
    degrees more or less), so no derivative-based search: every flick is replayed on a grid over the
    whole range, and the fit is a straight line through the grid points around the best one.  Leaves
    the model's cone and friction changed (the caller restores them).
    """
    model.opt.cone = _CONE_ENUM[cone]
    grid = np.linspace(*(math.log(b) for b in SCALE_BOUNDS), _GRID)
    T = np.array([np.sum((ends(math.exp(x)) - before_xy) * along, axis=1) for x in grid])
    fit = _line_fit(grid, T, observed)
    return fit, ends(math.exp(fit.log_s)) - before_xy


@dataclasses.dataclass(frozen=True)
class _LineFit:
    log_s: float  # the fitted ln(scale)
    info: float  # sum of the flicks' squared slopes (offset removed): the fit's information
    rough: float  # RMS of the replays about their lines (m)
    slope: np.ndarray  # each flick's d(travel)/d(ln scale) (m)
    at_bound: str | None


def _line_fit(grid: np.ndarray, T: np.ndarray, observed: np.ndarray) -> _LineFit:
    """The ln(scale) at which the replayed travels ``T`` (grid x flicks) match ``observed``.

    But for the offset all flicks share; straight lines through the grid points around the best one.
    """
    R = T - observed
    i = int(np.argmin([float(np.sum((r - _offset(r)) ** 2)) for r in R]))
    near = slice(max(i - _LOCAL, 0), min(i + _LOCAL, len(grid) - 1) + 1)
    x = grid[near]
    lines = [np.polyfit(x, T[near, k], 1) for k in range(T.shape[1])]
    slope = np.array([line[0] for line in lines])
    rough = float(np.sqrt(np.mean([np.var(T[near, k] - np.polyval(lines[k], x)) for k in range(T.shape[1])])))
    u = np.array([np.polyval(line, 0.0) for line in lines]) - observed
    u_c, g_c = u - _offset(u), slope - _offset(slope)
    info = float(np.sum(g_c**2))
    log_s = float(np.clip(-np.sum(u_c * g_c) / info, x[0], x[-1])) if info > 0 else float(grid[i])
    at_bound = None
    if log_s - grid[0] < 0.01:
        at_bound = "low: even the least friction searched leaves the object short of where it was seen"
    elif grid[-1] - log_s < 0.01:
        at_bound = "high: even the most friction searched slides the object past where it was seen"
    return _LineFit(log_s=log_s, info=info, rough=rough, slope=slope, at_bound=at_bound)


def _offset(r: np.ndarray) -> float:
    """The travel error all flicks share (two or more flicks), removed before comparing them.

    Where the replay puts the object relative to the fingers is off by the views' bias (a partly seen
    object's centre and size), which shortens or lengthens every push alike; the slide after the fingers
    let go grows with the speed squared.  So flicks at different speeds are compared by how their travels
    differ, and a single flick by its travel.
    """
    return float(np.mean(r)) if r.size >= 2 else 0.0


def _replay(world: Any, flick: dict[str, Any], before: np.ndarray, interface: str) -> np.ndarray:
    """Replay one flick in ``world`` from the object's seen ``before`` (x, y, yaw); its xy at rest."""
    motion = flick.get("_motion")
    if motion is None:
        motion = read_joint_motion(
            flick["bag"], world.arm_joint_names, window=(flick["t0"], flick["t1"]), interface=interface
        )
        if motion is None:
            raise BagError(f"bag {flick['bag']}: slide flick {flick['index']} carries no arm commands")
        flick["_motion"] = motion
    model, data = world.model, world.data
    delay = world.command_delay_s
    world.command_delay_s = 0.0
    try:
        world.reset(0)
        names = tuple(world.arm_joint_names)
        jids = [model.joint(n).id for n in names]
        qadr = np.array([model.jnt_qposadr[j] for j in jids])
        data.qpos[qadr] = motion.q[0]
        world.set_arm_command(motion.q[0], immediate=True)
        world.set_gripper_command(float(flick["gripper"]), immediate=True)
        world.place_task_object(float(before[0]), float(before[1]), float(before[2]))
        mujoco.mj_forward(model, data)
        world.step(max(1, int(round(_PREROLL_S / world.timestep))))
        # The object exactly where it was seen, at rest, the arm as recorded.
        world.place_task_object(float(before[0]), float(before[1]), float(before[2]))
        data.qvel[:] = 0.0
        data.qpos[qadr] = motion.q[0]
        mujoco.mj_forward(model, data)
        shift = float(data.time) - float(motion.t[0])  # bag clock -> this world's clock
        end = [float(flick["t1"]) + shift]
        for _ in replay_commands(world, motion.cmd_t + shift, motion.cmd_q, delay, end):
            pass
    finally:
        world.command_delay_s = delay
    # Where it lies, even off the table: a replay that slides it that far is simply a long one.
    xy = np.asarray(world.body_pose(world.config.task.object_body)[0][:2], dtype=np.float64)
    if not np.all(np.isfinite(xy)):
        raise ReconstructionError(f"slide flick {flick['index']}: the replay diverged (non-finite state)")
    return xy
