"""A depth-only top-down pick-and-place policy (registered as ``topdown``), a design unlike ``reference``."""

from r2s2r_eval.policies.topdown.config import TopdownParams
from r2s2r_eval.policies.topdown.policy import TopdownPolicy

__all__ = ["TopdownParams", "TopdownPolicy"]
