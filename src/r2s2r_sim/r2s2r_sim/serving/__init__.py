"""The ROS-free serving core the driver-topic nodes wrap: the physics loop, schedules, pacing and lockstep."""
