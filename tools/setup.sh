#!/usr/bin/env bash
# make setup: idempotent install of everything r2s2r needs, into .venv and install/.
# Re-running it only does what changed: apt packages already present are skipped, pip is a no-op when
# the venv already satisfies requirements/constraints.txt, colcon rebuilds only changed interfaces.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
VENV=$ROOT/.venv
START=$(date +%s)
say() { printf '[setup] %s\n' "$*"; }

# 1. Debian packages: compilers and cmake for r2s2r_msgs, EGL/OSMesa for headless MuJoCo
#    rendering, libusb for open3d, Python headers for the rosidl Python extensions, FFmpeg's shared
#    libraries for torchcodec (it decodes LeRobot dataset videos).
APT_PKGS=(build-essential cmake pkg-config libegl1 libgl1 libosmesa6 libusb-1.0-0 python3-dev python3-venv ffmpeg)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
# A pyenv/other interpreter brings its own headers; python3-dev/venv only matter for Debian's python3.
if ! "$PYTHON" -c 'import sysconfig,os,sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"],"Python.h")) else 1)'; then :; else
  missing=("${missing[@]/python3-dev}")
fi
"$PYTHON" -m venv --help >/dev/null 2>&1 && missing=("${missing[@]/python3-venv}")
read -r -a missing <<<"${missing[*]:-}"
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "missing Debian packages; run:  sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
fi

# 2. The virtual environment, pinned by requirements/constraints.txt.
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp=$VENV/.r2s2r-requirements
want=$(cat requirements/requirements.txt requirements/learning.txt requirements/learning-nodeps.txt \
        requirements/constraints.txt | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing Python packages (pinned by requirements/constraints.txt)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade "pip==26.3" 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      -r requirements/requirements.txt -r requirements/learning.txt -c requirements/constraints.txt 2>&1 \
      | grep -v '^WARNING: Location' || true
  # lerobot and torchcodec without their declared dependencies (learning-nodeps.txt says why); torch stays.
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      -r requirements/learning-nodeps.txt 2>&1 | grep -v '^WARNING: Location' || true
  bash tools/pip_check.sh "$VENV"
  "$VENV/bin/python" -c 'import rclpy, mujoco, pybullet, cv2, rosbags, transforms3d, scipy, yaml' \
      || { say "the Python packages did not install; see the pip output above"; exit 1; }
  "$VENV/bin/python" -c 'import av, datasets, pandas, torchcodec.decoders, importlib.util as u
assert u.find_spec("lerobot.datasets.lerobot_dataset"), "lerobot is not installed"' \
      || { say "the LeRobot packages did not install; see the error above"; exit 1; }
  echo "$want" >"$stamp"
else
  say "Python packages already match requirements/constraints.txt"
fi

# 3. The ROS wheels' CMake exports name their build machine's Python (see the script's docstring).
"$VENV/bin/python" tools/fix_ros_cmake_exports.py "$VENV"

# 4. Build the interface packages with colcon against the venv.
# shellcheck disable=SC1091
source "$VENV/bin/activate"
export AMENT_PREFIX_PATH=$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}
export CMAKE_PREFIX_PATH=$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
paths=(src/r2s2r_msgs)
# tf2_msgs and control_msgs are not on PyPI; build the vendored copies (the verbatim standard TFMessage
# definition; control_msgs' unmodified Jazzy sources) only when no real package of that name is installed
# (a ROS distro's own always wins: vendor/ carries COLCON_IGNORE).
IFS=: read -r -a prefixes <<<"$AMENT_PREFIX_PATH"
installed() {
  local p
  for p in "${prefixes[@]}"; do
    # Our own install/ (on the path once env.sh is sourced) is what this step builds, not a distro's.
    case "$p" in "$ROOT/install"*) continue ;; esac
    [ -f "$p/share/ament_index/resource_index/packages/$1" ] && return 0
  done
  return 1
}
for vendored in tf2_msgs control_msgs; do installed "$vendored" || paths+=("vendor/$vendored"); done
mkdir -p build
# Rebuilt when a source file (or the set of packages) changed: a build with nothing to do still costs seconds.
cstamp=build/.r2s2r-colcon
cwant=$( { printf '%s\n' "${paths[@]}" "$VENV"; find "${paths[@]}" -type f -not -path '*/__pycache__/*' -print0 \
  | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)
if [ "$(cat "$cstamp" 2>/dev/null)" != "$cwant" ] || [ ! -f install/setup.bash ]; then
  say "building ${paths[*]} with colcon"
  colcon --log-base build/log build --paths "${paths[@]}" --build-base build --install-base install \
      --event-handlers console_direct- console_stderr- status- \
      --cmake-args -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=OFF >build/colcon.out 2>&1 \
    || { tail -40 build/colcon.out; say "colcon build failed; full output in build/colcon.out"; exit 1; }
  echo "$cwant" >"$cstamp"
else
  say "${paths[*]} already built"
fi

# 5. The Python packages, editable, so their console scripts (the nodes and `r2s2r`) are on PATH.
#    Re-installed when setup.cfg changes, since entry points (nodes, subcommands, policies) live there.
for pkg in r2s2r_sim r2s2r_eval r2s2r_capture; do
  pstamp=$VENV/.r2s2r-$pkg
  pwant=$(cat "src/$pkg/setup.py" "src/$pkg/setup.cfg" | sha256sum | cut -c1-16)
  if [ "$(cat "$pstamp" 2>/dev/null)" != "$pwant" ] || ! compgen -G "$VENV/lib/python3*/site-packages/$pkg-*.dist-info" >/dev/null; then
    say "installing $pkg (editable)"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
        -e "src/$pkg" >build/pip-"$pkg".out 2>&1 || { cat build/pip-"$pkg".out; exit 1; }
    echo "$pwant" >"$pstamp"
  fi
done

# 6. Register the packages in the ament resource index of the venv prefix (on AMENT_PREFIX_PATH through
#    env.sh), as colcon would: `ros2 launch r2s2r_sim ...`, `ros2 run` and ament_index_python find them,
#    their launch/ and config/ files and their executables. Symlinks, so edits are live; cheap to redo.
"$VENV/bin/python" tools/register_ament_packages.py --prefix "$VENV" src/r2s2r_sim src/r2s2r_eval src/r2s2r_capture

# 7. Smoke check through the same environment script users source.
bash -c 'source ./env.sh && python -c "import rclpy, r2s2r_msgs.msg, tf2_msgs.msg, control_msgs.action, r2s2r_sim, r2s2r_eval, r2s2r_capture
from ament_index_python.packages import get_package_share_directory as share
assert share(\"r2s2r_sim\")"' \
  || { say "environment check failed"; exit 1; }
say "done in $(( $(date +%s) - START )) s. Use it in a shell with:  source env.sh"
