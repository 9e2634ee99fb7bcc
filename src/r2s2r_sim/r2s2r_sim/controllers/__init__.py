"""Controllers served as ros2_control serves them: the joint trajectory and gripper action cores, ROS-free."""
