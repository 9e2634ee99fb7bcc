"""Benchmarks (``make bench``): speed as ratios against a baseline measured in the same run."""
