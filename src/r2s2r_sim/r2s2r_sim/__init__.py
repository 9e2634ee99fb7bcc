"""r2s2r_sim."""
