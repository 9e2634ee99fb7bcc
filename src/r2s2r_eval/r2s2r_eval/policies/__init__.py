"""Policy plug-ins bundled with r2s2r_eval, one folder each (``<name>/config.py``, ``<name>/policy.py``)."""
