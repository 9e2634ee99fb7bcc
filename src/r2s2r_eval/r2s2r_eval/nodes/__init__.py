"""ROS node adapters: the policy node, the evaluator node and their message conversions.

With the soak study, the only modules of r2s2r_eval that import rclpy or message packages; each node
declares its parameters, converts messages and calls the ROS-free core (episodes/, policy.py).
"""
