#!/usr/bin/env bash
# Builds a ROS 2 interface package with cmake + rosidl against the ROS wheels of a venv.
#   tools/build_interfaces.sh [VENV]                      src/payload_id_msgs, installed into VENV (default .venv)
#   tools/build_interfaces.sh VENV SOURCE PREFIX BUILD    SOURCE installed into PREFIX (test-only packages:
#                                                          test/controller_interfaces.py), built in BUILD
# Works around the packaging bugs of the PyPI ROS 2 wheels (see docs/design.md).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=$(cd "${1:-$here/.venv}" && pwd)
source_dir="${2:-$here/src/payload_id_msgs}"
prefix="${3:-$venv}"
build="${4:-$here/build/payload_id_msgs}"
py="$venv/bin/python"
mkdir -p "$build"

# The wheels carry the Python and numpy include dirs of their build image.
py_inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
np_inc=$("$py" -c 'import numpy; print(numpy.get_include())')
for f in "$venv"/share/*/cmake/*__rosidl_generator_pyExport.cmake; do
  if grep -q '/opt/python/cp3' "$f"; then
    sed -i -E "s#/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\.[0-9]+#$py_inc#g; \
               s#/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\.[0-9]+/site-packages/numpy/_core/include#$np_inc#g" "$f"
  fi
done

export AMENT_PREFIX_PATH="$venv"
export CMAKE_PREFIX_PATH="$venv"
export PATH="$venv/bin:$PATH"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# rosidl's cmake finds these python modules through PYTHONPATH, not the venv's site.
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
cmake -S "$source_dir" -B "$build" \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$py" -DPYTHON_EXECUTABLE="$py" \
  -DBUILD_TESTING=OFF >"$build.cmake.log" 2>&1 || { tail -40 "$build.cmake.log"; exit 1; }
cmake --build "$build" -j2 >"$build.build.log" 2>&1 || { tail -40 "$build.build.log"; exit 1; }
cmake --install "$build" >"$build.install.log" 2>&1 || { tail -20 "$build.install.log"; exit 1; }
