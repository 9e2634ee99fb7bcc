"""Point the ROS wheels' CMake exports at this interpreter's Python and numpy headers.

Why: the ROS 2 PyPI wheels are built in a manylinux container whose CPython lives in
/opt/python/cpXY-cpXY. Every message package's ``export_<pkg>__rosidl_generator_pyExport.cmake``
keeps that container's include directories in INTERFACE_INCLUDE_DIRECTORIES. CMake refuses to
generate a build that links an imported target with a non-existent include path, so colcon
cannot build any interface package (r2s2r_msgs) that depends on them. We rewrite those two paths to
the venv's own Python include dir and numpy include dir. Idempotent: a fixed file has no
/opt/python left. Run with the venv's python.
"""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import numpy

_BUILD_MACHINE_PATHS = re.compile(
    r"/opt/python/cp\d+-cp\d+/(include/python[\d.]+|lib/python[\d.]+/site-packages/numpy/_core/include)"
)


def _replacement(match: re.Match[str]) -> str:
    if match.group(1).startswith("include/"):
        return sysconfig.get_paths()["include"]
    return numpy.get_include()


def fix(prefix: Path) -> list[Path]:
    """Rewrite every CMake export under ``prefix/share`` that names the wheel build machine's paths."""
    fixed = []
    for path in sorted(prefix.glob("share/*/cmake/*.cmake")):
        text = path.read_text()
        if "/opt/python/" not in text:
            continue
        path.write_text(_BUILD_MACHINE_PATHS.sub(_replacement, text))
        fixed.append(path)
    return fixed


def main() -> int:
    """Fix the exports under the prefix given as the first argument (default: this interpreter's)."""
    prefix = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(sys.prefix)
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not include.is_file():
        print(
            f"fix_ros_cmake_exports: {include} is missing; install the Python development headers",
            file=sys.stderr,
        )
        return 1
    fixed = fix(prefix)
    print(f"fix_ros_cmake_exports: corrected {len(fixed)} CMake export file(s) under {prefix}/share")
    return 0


if __name__ == "__main__":
    sys.exit(main())
