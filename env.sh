# Source this file to get the r2s2r environment in your shell (bash or zsh):  source env.sh
# It activates .venv (ROS 2 Jazzy wheels, MuJoCo, ...), overlays the colcon-built interfaces in
# install/, and selects headless rendering. `make setup` creates both.
_r2s2r_root=$(cd "$(dirname "${BASH_SOURCE[0]:-${(%):-%x}}")" && pwd)
if [ ! -f "$_r2s2r_root/.venv/bin/activate" ] || [ ! -f "$_r2s2r_root/install/setup.sh" ]; then
  echo "r2s2r: run 'make setup' first ($_r2s2r_root/.venv or install/ is missing)" >&2
  return 1 2>/dev/null || exit 1
fi
# shellcheck disable=SC1091
source "$_r2s2r_root/.venv/bin/activate"
# The wheels install their ament index under the venv prefix; colcon's overlay script adds install/.
export AMENT_PREFIX_PATH="$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
COLCON_CURRENT_PREFIX="$_r2s2r_root/install" . "$_r2s2r_root/install/setup.sh"
export MUJOCO_GL="${MUJOCO_GL:-egl}"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
unset _r2s2r_root
