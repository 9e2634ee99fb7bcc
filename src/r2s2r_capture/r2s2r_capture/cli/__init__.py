"""The capture subcommands of the r2s2r command line."""
