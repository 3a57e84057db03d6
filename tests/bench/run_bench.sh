#!/usr/bin/env bash
# Runs every benchmark binary (*_bench) of a build, then the Python benchmarks beside this script
# (*_bench.py): run_bench.sh BUILD_DIR [benchmark flags...]
set -euo pipefail
build=${1:?usage: run_bench.sh BUILD_DIR [benchmark flags...]}
shift
dir="$build/tests/bench"
found=0
for exe in "$dir"/*_bench; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  found=1
  echo "== $(basename "$exe")"
  "$exe" "$@"
  echo
done
# Python benchmarks (the client's census): run from the source tree with Debian's python3.
for script in "$(dirname "$0")"/*_bench.py; do
  [ -f "$script" ] || continue
  echo "== $(basename "$script")"
  /usr/bin/python3 "$script"
  echo
done
if [ "$found" -eq 0 ]; then
  echo "run_bench.sh: no *_bench executables in $dir (configure with -DRAMGUARD_BUILD_BENCH=ON)" >&2
  exit 1
fi
