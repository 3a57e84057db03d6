#!/usr/bin/env bash
# The Python client as users install it, offline, with Debian's python3 and its tools:
#   - `python3 -m build --wheel --no-isolation` builds the wheel from client/python; it holds the
#     package (ramguard/__init__.py, py.typed) and nothing else;
#   - the wheel installs with pip into a fresh venv (no index), and
#     `pip install --no-build-isolation client/python` into a fresh venv with the system's
#     setuptools; in both `import ramguard; ramguard.Client()` is the venv's copy;
#   - the client is `mypy --strict` clean, and a user's code type-checks against the installed
#     package (PEP 561): a correct use passes, a wrong one is an error mypy names.
#
#   python_package.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
python=/usr/bin/python3 # Debian's: its setuptools, build, wheel and mypy
fail() {
  echo "FAIL: $*"
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Builds write into the source directory (build/, *.egg-info): work on a copy.
cp -a "$src/client/python" "$work/src"
rm -rf "$work/src/build" "$work/src/dist" "$work/src"/*.egg-info

"$python" -m build --wheel --no-isolation --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "python3 -m build --no-isolation failed"; }
wheel=$(echo "$work"/dist/ramguard-*-py3-none-any.whl)
[ -f "$wheel" ] || fail "no wheel in $work/dist"
contents=$("$python" -c 'import sys, zipfile; print("\n".join(sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if ".dist-info/" not in n)))' "$wheel")
[ "$contents" = $'ramguard/__init__.py\nramguard/py.typed' ] || fail "the wheel holds:"$'\n'"$contents"
cmp -s "$src/client/python/ramguard.py" <(unzip -p "$wheel" ramguard/__init__.py) ||
  fail "ramguard/__init__.py in the wheel is not client/python/ramguard.py"
echo "wheel: $(basename "$wheel"), $(stat -c %s "$wheel") bytes"

check_venv() { # VENV: ramguard imports from the venv and a Client can be made
  "$1/bin/python" - "$1" <<'PY' || fail "import ramguard in $1"
import os, sys
import ramguard
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(ramguard.__file__).startswith(venv), ramguard.__file__
assert os.path.isfile(os.path.join(os.path.dirname(ramguard.__file__), "py.typed"))
client = ramguard.Client(socket_path="/nonexistent/ramguard.sock")
print(f"venv {os.path.basename(venv)}: ramguard {ramguard.__version__} from {ramguard.__file__}")
PY
}
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index "$wheel" || fail "pip install of the wheel failed"
check_venv "$work/venv"
"$python" -m venv --system-site-packages "$work/venv-src"
"$work/venv-src/bin/pip" install --quiet --no-index --no-build-isolation "$work/src" ||
  fail "pip install --no-build-isolation client/python failed"
check_venv "$work/venv-src"

"$python" -m mypy --strict --no-incremental "$src/client/python/ramguard.py" ||
  fail "mypy --strict on client/python/ramguard.py"

# A user's coordinator, checked against the installed package only (from a directory without
# ramguard.py).
mkdir "$work/user"
cat >"$work/user/good.py" <<'PY'
import ramguard

def guard(client: ramguard.Client) -> int:
    with client.start_run("typed", declared_rounds=1) as run:
        with run.phase("aggregation"):
            pass
        result: ramguard.MarkResult = run.round_end()
        for verdict in result.verdicts:
            print(verdict.severity, verdict.summary)
    return ramguard.parse_size("2.5GB")
PY
sed -e 's/return ramguard.parse_size("2.5GB")/return ramguard.format_bytes(1)/' "$work/user/good.py" >"$work/user/bad.py"
(cd "$work/user" && "$python" -m mypy --strict --no-incremental \
  --python-executable "$work/venv/bin/python" good.py) || fail "a correct use does not type-check"
if out=$(cd "$work/user" && "$python" -m mypy --strict --no-incremental \
  --python-executable "$work/venv/bin/python" bad.py); then
  fail "mypy accepts returning a str as int: the installed package is not seen as typed"
fi
grep -qE 'bad.py:[0-9]+: error: Incompatible return value type \(got "str", expected "int"\)' <<<"$out" ||
  fail "mypy on the wrong use said: $out"
echo "typed: a user's code type-checks against the installed package (PEP 561)"
echo "python package: ok"
