"""The scripted reference stacking policy (registered as ``stack_reference``)."""

from r2s2r_eval.policies.stack.config import StackParams
from r2s2r_eval.policies.stack.policy import StackPolicy

__all__ = ["StackParams", "StackPolicy"]
