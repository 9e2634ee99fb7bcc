"""The ROS boundary: every node, the driver topics' I/O, message conversions, QoS, parameters, TF and DDS set-up."""
