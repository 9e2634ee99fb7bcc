"""Running and recording episodes, ROS-free.

The one episode runner over any cell, the sensor arrays a policy sees on both paths, sweeps (plan,
process pool or Ray, export), the results store, and the evaluator node's pure parts.
"""
