"""Drawing camera frames.

The renderer, render profiles, the lens model and the sensor effects applied to frames.
"""
