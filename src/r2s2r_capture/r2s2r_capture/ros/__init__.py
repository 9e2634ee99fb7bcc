"""The ROS boundary of capture: the recorder and player nodes."""
