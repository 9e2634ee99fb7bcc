"""Drawing camera frames: the renderer, render profiles, the lens model and the sensor effects applied to frames."""
