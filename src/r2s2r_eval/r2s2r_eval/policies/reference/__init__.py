"""The scripted reference pick-and-place policy (registered as ``reference``)."""

from r2s2r_eval.policies.reference.config import ReferenceParams
from r2s2r_eval.policies.reference.policy import ReferencePolicy

__all__ = ["ReferenceParams", "ReferencePolicy"]
