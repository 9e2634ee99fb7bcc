"""The ament package that holds the URDF's meshes, so a viewer resolves them as ``package://`` URIs.

A ``file://`` URI names a path on the machine that wrote it, which RViz on another machine or a Foxglove
in a browser cannot open. ``package://r2s2r_meshes/meshes/<hash>.stl`` names a file of an ament package
instead: RViz finds it through the ament index (``AMENT_PREFIX_PATH``), and the Foxglove node serves it to
any viewer through its asset service. The meshes are written at run time (a world's robot is known only
then), so the package lives in its own install prefix in the user's cache folder, not in a read-only
install: ``<prefix>/share/r2s2r_meshes/meshes/`` with the ament index's marker file beside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

__all__ = [
    "MESH_PACKAGE",
    "MeshPackage",
    "MeshPackageError",
    "ament_prefix_path",
    "default_prefix",
    "mesh_environment",
    "read_package_uri",
    "resolve_package_uri",
]

MESH_PACKAGE = "r2s2r_meshes"
# What a package:// URI may name for a viewer: meshes and their textures, nothing else of a share folder.
SERVED_SUFFIXES = frozenset({".stl", ".dae", ".obj", ".glb", ".gltf", ".ply", ".png", ".jpg", ".jpeg"})
MAX_ASSET_BYTES = 256 * 1024 * 1024  # larger than any robot mesh; bounds what one request reads
_PACKAGE_XML = """<?xml version="1.0"?>
<package format="3">
  <name>{name}</name>
  <version>0.0.0</version>
  <description>Meshes of the robots r2s2r serves, written at run time from the compiled worlds.</description>
  <maintainer email="r2s2r@example.org">r2s2r developers</maintainer>
  <license>Apache-2.0</license>
</package>
"""


class MeshPackageError(ValueError):
    """A ``package://`` URI that does not name a servable file; names the URI and why."""


def default_prefix(env: Mapping[str, str] | None = None) -> Path:
    """The mesh package's install prefix in ``env`` (default: ours): ``$XDG_CACHE_HOME/r2s2r/ament``.

    ``XDG_CACHE_HOME`` defaults to ``~/.cache``.
    """
    cache = (os.environ if env is None else env).get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "r2s2r" / "ament"


def ament_prefix_path(prefix: Path, current: str | None = None) -> str:
    """``AMENT_PREFIX_PATH`` with ``prefix`` first (once), for a process that must resolve the meshes."""
    parts = [p for p in (current or "").split(os.pathsep) if p and Path(p) != prefix]
    return os.pathsep.join([str(prefix), *parts])


def mesh_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a process with environment ``env`` adds to it to resolve the meshes: their package's prefix.

    The sim node writes the URDF's meshes into that package; RViz and the Foxglove node resolve its
    ``package://`` URIs through the ament index, so every process of a graph must see the same prefix.
    """
    prefix = default_prefix(env).resolve()
    return {"AMENT_PREFIX_PATH": ament_prefix_path(prefix, env.get("AMENT_PREFIX_PATH"))}


class MeshPackage:
    """The mesh package under ``prefix``: where a mesh is written and the URI that names it."""

    def __init__(self, prefix: Path | None = None) -> None:
        self.prefix = (prefix or default_prefix()).resolve()
        self.share = self.prefix / "share" / MESH_PACKAGE
        self.folder = self.share / "meshes"

    def create(self) -> None:
        """Make the package findable through the ament index (idempotent)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        marker = self.prefix / "share" / "ament_index" / "resource_index" / "packages" / MESH_PACKAGE
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        manifest = self.share / "package.xml"
        if not manifest.is_file():
            manifest.write_text(_PACKAGE_XML.format(name=MESH_PACKAGE))

    def uri(self, name: str) -> str:
        """The ``package://`` URI of the mesh file ``name`` in this package."""
        return f"package://{MESH_PACKAGE}/meshes/{name}"


def resolve_package_uri(uri: str) -> Path:
    """The file a ``package://<pkg>/<path>`` URI names, through the ament index (``AMENT_PREFIX_PATH``).

    Raises:
        MeshPackageError: not a package URI, an unknown package, a path leaving the package's share
            folder, a file type a viewer does not load, or no such file.
    """
    scheme, sep, rest = uri.partition("://")
    if scheme != "package" or not sep:
        raise MeshPackageError(f"{uri!r}: not a package:// URI")
    package, _, relative = rest.partition("/")
    if not package or not relative:
        raise MeshPackageError(f"{uri!r}: expected package://<package>/<path>")
    try:
        share = Path(get_package_share_directory(package)).resolve()
    except (PackageNotFoundError, ValueError) as err:
        raise MeshPackageError(f"{uri!r}: package {package!r} is not in the ament index: {err}") from None
    path = (share / relative).resolve()
    if not path.is_relative_to(share):
        raise MeshPackageError(f"{uri!r}: leaves the share folder of {package!r}")
    if path.suffix.lower() not in SERVED_SUFFIXES:
        raise MeshPackageError(f"{uri!r}: not a mesh or texture ({', '.join(sorted(SERVED_SUFFIXES))})")
    if not path.is_file():
        raise MeshPackageError(f"{uri!r}: no such file {path}")
    return path


def read_package_uri(uri: str) -> bytes:
    """The bytes of the file ``uri`` names (see :func:`resolve_package_uri`), at most ``MAX_ASSET_BYTES``.

    Raises:
        MeshPackageError: as :func:`resolve_package_uri`, or a file larger than ``MAX_ASSET_BYTES``.
    """
    path = resolve_package_uri(uri)
    size = path.stat().st_size
    if size > MAX_ASSET_BYTES:
        raise MeshPackageError(f"{uri!r}: {size} bytes, more than the {MAX_ASSET_BYTES} a viewer is sent")
    return path.read_bytes()
