"""r2s2r_capture."""
