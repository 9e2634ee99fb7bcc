"""Visuomotor behaviour-cloning policy (small CNN on downscaled RGB + joint state, PyTorch CPU)."""
