"""Task classes beyond pick-and-place, one module each; registered in :data:`r2s2r_sim.task.TASKS`."""
