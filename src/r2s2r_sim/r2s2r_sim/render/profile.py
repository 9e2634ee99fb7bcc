"""Render profiles: what a camera's renderer spends its time on (shadows, reflections, lights, samples, size).

A world file names its profiles under ``render_profiles`` and each camera declares the one it uses
(``render_profile``); a run may choose another by name (the sweep's ``--render-profile``, the sim node's
``render_profile`` parameter).  Every field maps onto one of MuJoCo's own rendering knobs: the scene flags
``mjRND_SHADOW``/``mjRND_REFLECTION``/``mjRND_SKYBOX``, ``model.vis.quality.shadowsize`` and ``offsamples``
(read when the render context is made) and the scene's light list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from r2s2r_sim.errors import WorldError

if TYPE_CHECKING:
    from r2s2r_sim.config_reader import Reader

__all__ = ["BUILTIN_PROFILES", "FAST", "FULL", "RenderProfile", "resolve_profile"]

# MuJoCo allocates shadow maps as square textures; beyond 16384 px llvmpipe runs out of memory.
_SHADOW_SIZE_RANGE = (64, 16384)
_MAX_SAMPLES = 16


@dataclass(frozen=True, kw_only=True)
class RenderProfile:
    """How one camera is rendered.

    Attributes:
        name: the profile's name in the world file (``full``, ``fast``, ...).
        shadows: draw shadows (``mjRND_SHADOW``): one extra depth pass per shadow-casting light.
        shadow_size: shadow map side (px, power of two in [64, 16384]); None keeps the MJCF's
            ``<visual><quality shadowsize>``.
        reflections: draw reflective materials (``mjRND_REFLECTION``): one extra scene pass.
        skybox: draw the skybox texture, if the model has one (``mjRND_SKYBOX``).
        max_lights: draw at most this many of the scene's lights (>= 1), in the scene's order: the
            headlight first (if on), then the model's lights; None: all.
        multisamples: offscreen MSAA samples (``<visual><quality offsamples>``, 0 turns it off); None keeps
            the MJCF's.
        width, height: rendered image size (px); None keeps the camera's (give both or neither).  The
            camera_info published with the image is computed for the rendered size.
    """

    name: str
    shadows: bool = True
    shadow_size: int | None = None
    reflections: bool = True
    skybox: bool = True
    max_lights: int | None = None
    multisamples: int | None = None
    width: int | None = None
    height: int | None = None

    def __post_init__(self) -> None:
        def fail(field: str, msg: str) -> WorldError:
            return WorldError(f"render_profiles.{self.name}.{field}: {msg}")

        if not self.name:
            raise WorldError("render_profiles: a profile name must not be empty")
        lo, hi = _SHADOW_SIZE_RANGE
        s = self.shadow_size
        if s is not None and not (lo <= s <= hi and s & (s - 1) == 0):
            raise fail("shadow_size", f"must be a power of two in [{lo}, {hi}] px, got {s}")
        if self.max_lights is not None and self.max_lights < 1:
            raise fail("max_lights", f"must be >= 1 (or absent for all lights), got {self.max_lights}")
        if self.multisamples is not None and not 0 <= self.multisamples <= _MAX_SAMPLES:
            raise fail("multisamples", f"must be in [0, {_MAX_SAMPLES}], got {self.multisamples}")
        if (self.width is None) != (self.height is None):
            raise fail("width", "give both width and height, or neither")
        for field in ("width", "height"):
            value = getattr(self, field)
            if value is not None and value < 1:
                raise fail(field, f"must be >= 1 px, got {value}")

    def size(self, width: int, height: int) -> tuple[int, int]:
        """The rendered size for a camera of ``width`` x ``height`` (px)."""
        if self.width is not None and self.height is not None:
            return self.width, self.height
        return width, height

    def differs_from(self, other: RenderProfile) -> list[str]:
        """Names of the fields (other than ``name``) whose values differ."""
        return [
            f.name
            for f in dataclasses.fields(self)
            if f.name != "name" and getattr(self, f.name) != getattr(other, f.name)
        ]


FULL = RenderProfile(name="full")
"""Everything the MJCF asks for: what the renderer drew before profiles existed."""

FAST = RenderProfile(name="fast", shadows=False, reflections=False, skybox=False)
"""No shadows, reflections or skybox: the passes that cost most on a CPU rasteriser."""

BUILTIN_PROFILES: Mapping[str, RenderProfile] = {p.name: p for p in (FULL, FAST)}


def resolve_profile(profiles: Mapping[str, RenderProfile], name: str, *, where: str) -> RenderProfile:
    """The profile called ``name``.

    Raises:
        WorldError: no such profile; names ``where`` (the option or field) and the valid names.
    """
    try:
        return profiles[name]
    except KeyError:
        raise WorldError(f"{where}: unknown render profile {name!r} (profiles: {sorted(profiles)})") from None


def parse_profiles(r: Reader | None) -> dict[str, RenderProfile]:
    """The ``render_profiles`` mapping of a world file, over the built-in ``full`` and ``fast``.

    A profile the world file names replaces the built-in one of that name.
    """
    profiles = dict(BUILTIN_PROFILES)
    if r is None:
        return profiles
    for key in list(r.data):
        if not isinstance(key, str) or not key:
            raise r.fail(str(key), "a profile name must be a non-empty string")
        sub = r.sub(key)
        assert sub is not None  # required=True
        profiles[key] = _parse_one(sub, key)
    r.finish()
    return profiles


def _optional_int(r: Reader, key: str) -> int | None:
    if not r.has(key):
        r.raw(key, required=False)  # an explicit null keeps the default
        return None
    return r.int_(key)


def _parse_one(r: Reader, name: str) -> RenderProfile:
    kwargs: dict[str, Any] = {
        "name": name,
        "shadows": r.bool_("shadows", default=True),
        "reflections": r.bool_("reflections", default=True),
        "skybox": r.bool_("skybox", default=True),
    }
    for key in ("shadow_size", "max_lights", "multisamples", "width", "height"):
        kwargs[key] = _optional_int(r, key)
    r.finish()
    try:
        return RenderProfile(**kwargs)
    except WorldError as err:
        raise WorldError(f"{r.where}: {err}") from None
