"""ament_python package r2s2r_sim: installable with colcon (ROS distro) or pip (editable, pip mode).

Its files, executables and plug-ins are declared in setup.cfg; colcon and pip both need this script.
"""

from setuptools import setup

setup()
