#!/usr/bin/env bash
# The Python client's wheel, built offline with Debian's python3 and its tools
# (python3-build, python3-setuptools, python3-wheel): `python3 -m build --wheel --no-isolation`
# on a copy of client/python (a build writes build/ and *.egg-info into its source directory),
# so the tree stays clean. Prints the wheel's path. Used by `./dev.sh package` and by
# tests/packaging/python_package.sh, so that the test checks the wheel people install.
#
#   client/python/build_wheel.sh OUTDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
python=/usr/bin/python3 # Debian's: a python3 earlier on PATH (pyenv) lacks python3-build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cp -a "$here/pyproject.toml" "$here/README.md" "$here/ramguard" "$work/"
find "$work" -name __pycache__ -prune -exec rm -rf {} +
"$python" -m build --wheel --no-isolation --outdir "$work/dist" "$work" >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  echo "build_wheel.sh: python3 -m build --wheel --no-isolation failed" >&2
  exit 1
}
wheel=$(echo "$work"/dist/ramguard-*-py3-none-any.whl)
[ -f "$wheel" ] || {
  echo "build_wheel.sh: no wheel in $work/dist" >&2
  exit 1
}
cp "$wheel" "$out/"
echo "$out/$(basename "$wheel")"
