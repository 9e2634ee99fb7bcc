"""The safety envelope an identification excitation must stay inside on a real arm, and the arm it bounds."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from r2s2r_sim.config_reader import Reader
from r2s2r_sim.errors import WorldError
from r2s2r_sim.ranges import check_fields, within
from r2s2r_sim.world.kinematics import subtree_bodies
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.yaml_files import read_yaml

from r2s2r_capture.errors import IdentificationError
from r2s2r_capture.sysid.recording import joint_id

__all__ = ["ArmTemplate", "JointBounds", "SafetyEnvelope", "load_envelope"]

_PREFIX = "envelope."
_VECTORS = ("workspace_min_m", "workspace_max_m")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SafetyEnvelope:
    """Where an excitation may take the arm; a plan that leaves it is refused before anything moves.

    The defaults are cautious for a tabletop arm: a slow, gentle excitation passes; anything faster is
    the user's decision, written down. Slide joints read the rad fields in m.

    Attributes:
        joint_margin_rad: kept from each joint's limits (rad).
        velocity_cap_rad_s: largest joint speed (rad/s), planned and measured.
        acceleration_cap_rad_s2: largest planned joint acceleration (rad/s²).
        effort_cap_fraction: largest planned joint effort, as a fraction of the actuator's force range
            (the joint's ``actuatorfrcrange`` too, where it has one).
        effort_cap_nm: largest planned joint effort (N·m, N on a slide joint) whatever the actuator can
            give; None: the fraction alone.  Needed for an actuator the model leaves unlimited.
        workspace_min_m, workspace_max_m: the box (world frame, m) the tool point stays inside.  The default
            is a 2 m cube above the world origin, an arm's reach; narrow it to the cell.
        min_clearance_m: the moving arm stays this far from everything the model lets it collide with:
            the scene and its own links, except a link and its parent (m).
        tracking_error_rad: the monitor stops when a joint is further than this from its set-point (rad).
        state_timeout_s: the monitor stops when no joint state has come for this long (s).  Keep it near
            the driver's state period on a cell; the stand-ins on a loaded machine may need seconds.
    """

    joint_margin_rad: float = within(0.1, "[0, 1] rad")
    velocity_cap_rad_s: float = within(1.0, "(0, 10] rad/s")
    acceleration_cap_rad_s2: float = within(5.0, "(0, 100] rad/s²")
    effort_cap_fraction: float = within(0.8, "(0, 1]")
    effort_cap_nm: float | None = within(None, "> 0 N·m")
    workspace_min_m: tuple[float, float, float] = (-1.0, -1.0, 0.0)
    workspace_max_m: tuple[float, float, float] = (1.0, 1.0, 2.0)
    min_clearance_m: float = within(0.02, "[0, 0.5] m")
    tracking_error_rad: float = within(0.2, "(0, 2] rad")
    state_timeout_s: float = within(0.05, "(0, 5] s")

    def __post_init__(self) -> None:
        """Check each field's range and the box (errors name the field)."""
        check_fields(self, error=IdentificationError, prefix=_PREFIX)
        for name in _VECTORS:
            value = tuple(float(v) for v in getattr(self, name))
            if len(value) != 3 or not all(math.isfinite(v) for v in value):
                raise IdentificationError(
                    f"{_PREFIX}{name}: must be three finite numbers x, y, z, got {value}"
                )
            object.__setattr__(self, name, value)
        low, high = self.workspace_min_m, self.workspace_max_m
        for axis, lo, hi in zip("xyz", low, high, strict=True):
            if not lo < hi:
                raise IdentificationError(
                    f"{_PREFIX}workspace_min_m and workspace_max_m: {axis} must have min < max, "
                    f"got {lo} and {hi}"
                )

    def describe(self, arm: ArmTemplate | None = None) -> str:
        """The envelope as a short table, to read before anything moves; with ``arm``, its joints' bounds."""
        box = ", ".join(
            f"{a} [{lo:.2f}, {hi:.2f}]"
            for a, lo, hi in zip("xyz", self.workspace_min_m, self.workspace_max_m, strict=True)
        )
        effort = f"{self.effort_cap_fraction:.0%} of each actuator's force range"
        if self.effort_cap_nm is not None:
            effort += f", at most {self.effort_cap_nm:g} N·m"
        rows = [
            ("joint range margin", f"{self.joint_margin_rad:.3f} rad kept from each joint limit"),
            ("velocity cap", f"{self.velocity_cap_rad_s:.2f} rad/s per joint, planned and measured"),
            ("acceleration cap", f"{self.acceleration_cap_rad_s2:.2f} rad/s² per joint, planned"),
            ("effort cap", effort + ", planned (inverse dynamics)"),
            ("tool workspace", f"{box} m (world frame)"),
            ("clearance", f"{self.min_clearance_m:.3f} m from the scene and the arm's own links"),
            ("tracking error stop", f"{self.tracking_error_rad:.3f} rad from the set-point"),
            ("joint-state timeout", f"{self.state_timeout_s:.3f} s without a joint state"),
        ]
        width = max(len(r[0]) for r in rows)
        lines = ["Excitation safety envelope (a plan that leaves it is refused before anything moves):"]
        lines += [f"  {name:<{width}}  {text}" for name, text in rows]
        if arm is not None:
            lines.append(f"  per joint of {arm.name}:")
            lines.append(f"    {'joint':<16} {'allowed range':>22} {'effort cap':>12}")
            for b in arm.bounds(self):
                effort_cap = "none" if math.isinf(b.effort) else f"{b.effort:.1f}"
                lines.append(f"    {b.name:<16} [{b.lower:>9.3f}, {b.upper:>9.3f}] {effort_cap:>12}")
        return "\n".join(lines)


def load_envelope(path: str | Path, section: str = "envelope") -> SafetyEnvelope:
    """Read a :class:`SafetyEnvelope` from the mapping ``section`` of a YAML file; absent fields default.

    Raises:
        IdentificationError: naming the file and the field (missing file or section, unknown key, a value
            of the wrong type or out of its range).
    """
    src = Path(path)
    doc = read_yaml(src, IdentificationError, kind="envelope file")
    if not isinstance(doc.data, dict) or section not in doc.data:
        raise IdentificationError(f"{src}: {section}: required section is missing")
    values: dict[str, Any] = {}
    try:
        reader = Reader(doc.data[section], str(src), section)
        for fld in dataclasses.fields(SafetyEnvelope):
            if not reader.has(fld.name):
                reader.raw(fld.name, required=False)
            elif fld.name in _VECTORS:
                values[fld.name] = reader.floats(fld.name, 3)
            else:
                values[fld.name] = reader.float_(fld.name)
        reader.finish()
    except WorldError as err:  # the field reader's family; the message already names file and field
        raise IdentificationError(str(err)) from None
    try:
        return SafetyEnvelope(**values)
    except IdentificationError as err:
        raise IdentificationError(f"{src}: {section}.{str(err).removeprefix(_PREFIX)}") from None


@dataclasses.dataclass(frozen=True)
class JointBounds:
    """One joint's envelope: allowed positions (rad or m) and the planned effort cap (N·m or N; inf: none)."""

    name: str
    lower: float
    upper: float
    effort: float


class ArmTemplate:
    """The arm an excitation is checked on: a model, its excited joints, its tool point and the rest pose.

    Joint positions not excited (the gripper, the scene's objects) stay where ``qpos`` puts them.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        joint_names: Sequence[str],
        *,
        tool_site: str | None = None,
        qpos: np.ndarray | None = None,
        name: str = "",
    ) -> None:
        """Resolve the joints, their actuators and the tool point by name, once.

        Args:
            model: the template world (or the bare arm).
            joint_names: excited joints, in trajectory column order.
            tool_site: the tool point's site; None: the origin of the last joint's body.
            qpos: the pose of everything else (``model.nq``); None: the first keyframe, else ``qpos0``.
            name: what the table calls the arm.

        Raises:
            IdentificationError: an unknown joint or site, or a ``qpos`` of the wrong size.
        """
        self.model = model
        self.name = name or "the arm"
        self.joint_names = tuple(joint_names)
        self.joint_ids = np.array([joint_id(model, n) for n in self.joint_names], dtype=int)
        self.qadr = model.jnt_qposadr[self.joint_ids]
        self.dofadr = model.jnt_dofadr[self.joint_ids]
        limited = model.jnt_limited[self.joint_ids].astype(bool)
        self.lower = np.where(limited, model.jnt_range[self.joint_ids, 0], -np.inf)
        self.upper = np.where(limited, model.jnt_range[self.joint_ids, 1], np.inf)
        self.tool_site = -1
        if tool_site is not None:
            self.tool_site = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, tool_site))
            if self.tool_site < 0:
                raise IdentificationError(f"tool site {tool_site!r} not in the model")
        self.tool_name = tool_site or model.body(int(model.jnt_bodyid[self.joint_ids[-1]])).name
        self.tool_body = int(model.jnt_bodyid[self.joint_ids[-1]])
        if qpos is None:
            qpos = model.key_qpos[0] if model.nkey else model.qpos0
        self.qpos = np.array(qpos, dtype=np.float64)
        if self.qpos.shape != (model.nq,):
            raise IdentificationError(
                f"template qpos must have {model.nq} values, got shape {self.qpos.shape}"
            )
        # The bodies an excited joint moves: collisions count only where one of them takes part.
        moving: set[int] = set()
        for j in self.joint_ids:
            moving.update(subtree_bodies(model, int(model.jnt_bodyid[j])))
        self.moving_bodies = frozenset(moving)
        self._force_limit = np.array([self._joint_force_limit(int(j)) for j in self.joint_ids])

    @classmethod
    def from_world(cls, world: SimWorld) -> ArmTemplate:
        """The arm of a composed world, in the pose it is in now (after its reset: home, objects placed)."""
        site = world.config.robot.ee_site
        prefix = world.config.robot.prefix  # SimWorld's names are unprefixed; the model's are not
        return cls(
            world.model,
            [prefix + n for n in world.arm_joint_names],
            tool_site=None if site is None else world.model.site(world.site_id(site)).name,
            qpos=world.data.qpos.copy(),
            name=world.world_id,
        )

    def _joint_force_limit(self, jid: int) -> float:
        """The joint's effort limit (N·m or N) from its actuator's force range, gear and actuatorfrcrange."""
        m = self.model
        limit = math.inf
        joint_type = int(mujoco.mjtTrn.mjTRN_JOINT)
        for a in range(m.nu):
            if int(m.actuator_trntype[a]) == joint_type and int(m.actuator_trnid[a, 0]) == jid:
                if m.actuator_forcelimited[a]:
                    lo, hi = m.actuator_forcerange[a]
                    limit = min(limit, abs(float(m.actuator_gear[a, 0])) * min(abs(lo), abs(hi)))
        if m.jnt_actfrclimited[jid]:
            lo, hi = m.jnt_actfrcrange[jid]
            limit = min(limit, min(abs(lo), abs(hi)))
        return limit

    def bounds(self, envelope: SafetyEnvelope) -> list[JointBounds]:
        """Each joint's allowed range (its limits less the margin) and effort cap under ``envelope``."""
        cap = math.inf if envelope.effort_cap_nm is None else envelope.effort_cap_nm
        return [
            JointBounds(
                name,
                float(lo + envelope.joint_margin_rad),
                float(hi - envelope.joint_margin_rad),
                min(cap, envelope.effort_cap_fraction * float(force)),
            )
            for name, lo, hi, force in zip(
                self.joint_names, self.lower, self.upper, self._force_limit, strict=True
            )
        ]
