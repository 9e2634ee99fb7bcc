"""Cells: what a policy meets, reduced to calls (reset, observe, act).

The sim's cell and the emulated hardware's.
"""
