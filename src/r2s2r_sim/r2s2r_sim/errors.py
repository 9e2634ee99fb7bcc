"""Error family of the r2s2r simulation core."""

from __future__ import annotations

__all__ = ["RenderError", "WorldError"]


class WorldError(ValueError):
    """A world folder, its ``world.yaml`` or its MJCF is invalid.

    The message names the file and the field at fault and says what was expected, e.g.
    ``".../world.yaml: robot.arm_joints[2]: joint 'elbw' not in robot/arm6.xml (joints: ...)"``.
    Also raised for lookups of names that the world does not contain.
    """


class RenderError(RuntimeError):
    """A renderer was used in the wrong state (before ``__enter__`` or after ``__exit__``)."""
