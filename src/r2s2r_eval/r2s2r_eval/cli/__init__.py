"""The ``r2s2r`` subcommands of this package: arguments and exit statuses over the cores.

The closed-loop and transfer studies declare their subcommands in their own modules.
"""
