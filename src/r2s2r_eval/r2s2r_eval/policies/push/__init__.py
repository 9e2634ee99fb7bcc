"""The scripted reference push policy (registered as ``push_reference``)."""

from r2s2r_eval.policies.push.config import PushParams
from r2s2r_eval.policies.push.policy import PushPolicy

__all__ = ["PushParams", "PushPolicy"]
