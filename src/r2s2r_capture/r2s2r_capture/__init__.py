"""r2s2r_capture: record a physical cell, calibrate, reconstruct, identify and write its MuJoCo world."""

# Before any submodule imports mujoco: the sim package sets the headless GL default, once for all packages.
import r2s2r_sim  # noqa: F401
