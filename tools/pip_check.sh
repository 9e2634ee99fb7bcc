#!/usr/bin/env bash
# `pip check` for the venv at $1, less the one false report the real ROS 2 tools cause.
# launch_ros and ros2launch (installed from ../shared by setup_tests.sh) require the distribution
# `ament_index_python`; the Jazzy wheels ship that module as `ros-jazzy-ament-index-python`, so pip check
# names it although it imports (tools/setup_tests.sh imports it). lerobot is installed without its
# dependencies on purpose (requirements/learning-nodeps.txt says why), so its own lines are left out too.
# Anything else fails the check.
set -euo pipefail
problems=$("$1/bin/python" -m pip check 2>&1 | grep -v 'requires ament[-_]index[-_]python, which is not installed' \
           | grep -v '^lerobot 0\.4\.4 \(requires\|has requirement\) ' \
           | grep -v '^No broken requirements' || true)
if [ -n "$problems" ]; then printf '%s\n' "$problems"; echo "pip check failed" >&2; exit 1; fi
