"""The ROS boundary.

Every node, the driver topics' I/O, message conversions, QoS, parameters, TF and DDS set-up.
"""
