"""r2s2r_eval."""
