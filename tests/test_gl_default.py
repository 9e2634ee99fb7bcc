"""MuJoCo's GL backend is chosen once, by the sim package, before any module of any package imports mujoco."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# The first module each package's users import that loads mujoco itself.
ENTRY_MODULES = (
    "r2s2r_sim.world.sim_world",
    "r2s2r_capture.procedures.session",
    "r2s2r_eval.episodes.runner",
)

_PROBE = (
    "import importlib, os, sys; importlib.import_module(sys.argv[1]); import mujoco; "
    "print(os.environ.get('MUJOCO_GL'), 'mujoco' in sys.modules)"
)


def _probe(module: str, gl: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    if gl is not None:
        env["MUJOCO_GL"] = gl
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, module], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_headless_egl_is_the_default(module: str) -> None:
    assert _probe(module, None) == "egl True"


def test_a_callers_choice_is_kept() -> None:
    assert _probe("r2s2r_capture.procedures.session", "osmesa") == "osmesa True"
