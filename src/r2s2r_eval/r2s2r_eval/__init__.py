"""r2s2r_eval: policies, the evaluator, sweeps and the sim-versus-real studies."""

# Before any submodule imports mujoco: the sim package sets the headless GL default, once for all packages.
import r2s2r_sim  # noqa: F401
