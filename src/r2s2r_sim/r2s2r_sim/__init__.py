"""r2s2r_sim: MuJoCo worlds, the cells and the nodes that serve them on the real drivers' topics."""

import os

# MuJoCo picks its GL backend when first imported, and every submodule is imported after this package:
# headless EGL is the only backend that works without a display. A caller's choice is kept.
os.environ.setdefault("MUJOCO_GL", "egl")
