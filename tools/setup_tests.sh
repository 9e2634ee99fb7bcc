#!/usr/bin/env bash
# make test: install the real ROS 2 launch system and `ros2` command line for the tests, from the unmodified
# Jazzy sources in ../shared/conformance/ros2_jazzy_python (no package registry serves them). The product
# never needs them: `make setup` and `make demo` do not run this. Without ../shared it does nothing and
# the tests that need these tools skip, saying so.
# Re-running it only does what changed: the sources, requirements/test.txt and the pins are hashed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${R2S2R_VENV:-$ROOT/.venv}
SRC=${R2S2R_ROS2_PYTHON:-$ROOT/../shared/conformance/ros2_jazzy_python}
START=$(date +%s)
say() { printf '[setup-tests] %s\n' "$*"; }

if [ ! -d "$SRC" ]; then
  say "$SRC is not present: tests that need launch, launch_pytest or ros2cli will skip"
  exit 0
fi
SRC=$(cd "$SRC" && pwd)
# Dependency order does not matter to pip --no-deps; every package the tests use, and what they import.
PKGS=(
  launch_repo/launch launch_repo/launch_xml launch_repo/launch_yaml launch_repo/launch_testing
  launch_repo/launch_pytest launch_ros_repo/launch_ros launch_ros_repo/launch_testing_ros
  launch_ros_repo/ros2launch rosidl_runtime_py_repo ros2cli_repo/ros2cli ros2cli_repo/ros2pkg
  ros2cli_repo/ros2run ros2cli_repo/ros2topic ros2cli_repo/ros2node ros2cli_repo/ros2param
  ros2cli_repo/ros2service ros2cli_repo/ros2interface
)
IFACES=(rcl_interfaces_repo/composition_interfaces)

# Everything that decides the result: the sources (not build leftovers), the package list, the pins.
sources_hash() {
  (cd "$SRC" && find . \( -name build -o -name '*.egg-info' -o -name __pycache__ \) -prune -o -type f -print0 \
     | sort -z | xargs -0 sha256sum)
  printf '%s\n' "${PKGS[@]}" "${IFACES[@]}"
  cat requirements/test.txt requirements/constraints.txt
}
stamp=$VENV/.r2s2r-test-tools
want=$(sources_hash | sha256sum | cut -c1-16)
check='source ./env.sh && python -c "import launch_ros.actions, launch_pytest, ros2cli, composition_interfaces.srv"'
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && bash -c "$check" >/dev/null 2>&1; then
  say "launch, launch_pytest and ros2cli already installed from $SRC"
  exit 0
fi

# 1. Their dependencies from the registry, pinned like everything else.
say "installing requirements/test.txt (pinned by requirements/constraints.txt)"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements/test.txt \
    -c requirements/constraints.txt 2>&1 | grep -v '^WARNING: Location' || true

# 2. The pure-Python packages. pip builds in the source folder, and ../shared is read-only and shared
#    between checkouts, so each package is built from a copy under build/.
copy=build/ros2_jazzy_python
rm -rf "$copy"
mkdir -p "$copy"
dirs=()
for p in "${PKGS[@]}"; do
  dest=$copy/$(basename "$p")
  cp -r "$SRC/$p" "$dest"
  chmod -R u+w "$dest"
  rm -rf "$dest/build" "$dest"/*.egg-info
  dirs+=("$dest")
done
say "installing ${#dirs[@]} packages (launch, launch_ros, ros2launch, launch_pytest, ros2cli and verbs, ...)"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
    "${dirs[@]}" >build/pip-ros2-tools.out 2>&1 || { cat build/pip-ros2-tools.out; exit 1; }
bash tools/pip_check.sh "$VENV"

# 3. composition_interfaces (needed by launch_ros) is an interface package: colcon, as tools/setup.sh
#    builds r2s2r_msgs, into the same install/ that env.sh overlays.
# shellcheck disable=SC1091
source "$VENV/bin/activate"
export AMENT_PREFIX_PATH=$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}
export CMAKE_PREFIX_PATH=$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
paths=()
for p in "${IFACES[@]}"; do paths+=("$SRC/$p"); done
say "building ${IFACES[*]} with colcon"
colcon --log-base build/log build --paths "${paths[@]}" --build-base build --install-base install \
    --event-handlers console_direct- console_stderr- status- \
    --cmake-args -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=OFF >build/colcon-tests.out 2>&1 \
  || { tail -40 build/colcon-tests.out; say "colcon build failed; full output in build/colcon-tests.out"; exit 1; }

bash -c "$check && ros2 launch --help >/dev/null" || { say "the ROS 2 tools do not import; see the output above"; exit 1; }
echo "$want" >"$stamp"
say "done in $(( $(date +%s) - START )) s"
