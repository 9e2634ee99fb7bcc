"""Benchmarks of the sim (make bench): each a ratio against a baseline measured in the same run."""
