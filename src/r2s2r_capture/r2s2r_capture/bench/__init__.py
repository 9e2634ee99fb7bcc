"""Benchmarks of capture (make bench): the recorder and real2sim against their baselines."""
