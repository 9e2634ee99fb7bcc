"""Cells: what a policy meets, reduced to calls (reset, observe, act); the sim's cell and the emulated hardware's."""
