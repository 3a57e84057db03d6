#!/usr/bin/env bash
# Runs every benchmark binary (*_bench) of a build: run_bench.sh BUILD_DIR [benchmark flags...]
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
if [ "$found" -eq 0 ]; then
  echo "run_bench.sh: no *_bench executables in $dir (configure with -DRAMGUARD_BUILD_BENCH=ON)" >&2
  exit 1
fi
