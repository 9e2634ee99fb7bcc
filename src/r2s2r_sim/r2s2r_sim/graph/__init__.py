"""The node graph, defined once, and the pip-mode launcher that runs it without a ROS distro."""
