"""The scripted reference drawer-opening policy (registered as ``drawer_reference``)."""

from r2s2r_eval.policies.drawer.config import DrawerParams
from r2s2r_eval.policies.drawer.policy import DrawerPolicy

__all__ = ["DrawerParams", "DrawerPolicy"]
