#!/usr/bin/env bash
# The Python client as users install it, offline, with Debian's python3 and its tools:
#   - client/python/build_wheel.sh (what `./dev.sh package` runs: `python3 -m build --wheel
#     --no-isolation`) builds the wheel; it holds the package (every module of ramguard/, as in
#     the tree, and py.typed) and nothing else;
#   - the wheel installs with `pip install --no-index` into a fresh `python3 -m venv` without
#     the system's site packages (the documented offline path), and
#     `pip install --no-build-isolation client/python` into a fresh venv with the system's
#     setuptools; in both `import ramguard` and every module of it are the venv's copy, and
#     ramguard.Client() and parse_size() work;
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
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +

wheel=$("$src/client/python/build_wheel.sh" "$work/dist") || fail "client/python/build_wheel.sh failed"
[ -f "$wheel" ] || fail "no wheel at '$wheel'"
contents=$("$python" -c 'import sys, zipfile; print("\n".join(sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if ".dist-info/" not in n)))' "$wheel")
expected=$(cd "$src/client/python" && ls ramguard/*.py ramguard/py.typed | LC_ALL=C sort)
[ "$(LC_ALL=C sort <<<"$contents")" = "$expected" ] ||
  fail "the wheel holds:"$'\n'"$contents"$'\n'"where the tree has:"$'\n'"$expected"
for f in $expected; do
  cmp -s "$src/client/python/$f" <(unzip -p "$wheel" "$f") || fail "$f in the wheel is not client/python/$f"
done
echo "wheel: $(basename "$wheel"), $(stat -c %s "$wheel") bytes"

check_venv() { # VENV: ramguard and its modules import from the venv, and work
  "$1/bin/python" - "$1" <<'PY' || fail "import ramguard in $1"
import os, sys
import ramguard
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(ramguard.__file__).startswith(venv), ramguard.__file__
modules = [m for name, m in sys.modules.items() if name.startswith("ramguard.")]
assert len(modules) >= 8, sorted(sys.modules)
for m in modules:
    assert os.path.realpath(m.__file__).startswith(venv), m.__file__
assert os.path.isfile(os.path.join(os.path.dirname(ramguard.__file__), "py.typed"))
assert ramguard.parse_size("2.5GB") == 2_500_000_000
client = ramguard.Client(socket_path="/nonexistent/ramguard.sock")
print(f"venv {os.path.basename(venv)}: ramguard {ramguard.__version__} from {ramguard.__file__}")
PY
}
# The documented offline path: a fresh venv without the system's site packages (so without the
# wheel package, which a source install needs), `pip install --no-index` of the wheel.
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index "$wheel" || fail "pip install of the wheel failed"
check_venv "$work/venv"
"$python" -m venv --system-site-packages "$work/venv-src"
"$work/venv-src/bin/pip" install --quiet --no-index --no-build-isolation "$work/src" ||
  fail "pip install --no-build-isolation client/python failed"
check_venv "$work/venv-src"

"$python" -m mypy --strict --no-incremental "$src/client/python/ramguard" ||
  fail "mypy --strict on client/python/ramguard"

# A user's coordinator, checked against the installed package only (from a directory without
# ramguard/).
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
