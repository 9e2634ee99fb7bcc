"""The r2s2r command line: the entry point that gathers every package's subcommands, and the sim's own."""
