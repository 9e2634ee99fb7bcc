"""Studies built on sweeps and the graph.

Closed loop (does the reconstructed world predict the hardware?), sim-to-real transfer, per-task
study settings, render fidelity, and the soak test that runs the ROS graph for hours.
"""
