#!/usr/bin/env bash
# ramguard's one entry point for people and CI. Each command installs missing Debian packages
# (idempotently), configures and builds, then does its job.
#
#   ./dev.sh demo    the daemon on its embedded defaults guarding a real coordinator-like process
#   ./dev.sh test    every test: the normal build, then the ASan+UBSan build
#   ./dev.sh bench   the benchmarks (figures, not pass/fail)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD

PACKAGES=(build-essential cmake ninja-build pkg-config
  libasio-dev prometheus-cpp-dev libyaml-cpp-dev libjemalloc-dev libprotobuf-dev protobuf-compiler
  libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev
  prometheus python3 python3-jsonschema socat curl util-linux)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dev.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR [extra cmake args...]
build() {
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}

cmd=${1:-}
case "$cmd" in
  demo)
    install_packages
    build "$ROOT/build"
    exec "$ROOT/tests/demo/run_demo.sh" "$ROOT/build"
    ;;
  test)
    install_packages
    build "$ROOT/build"
    (cd "$ROOT/build" && ctest --output-on-failure -j 2 --timeout 300)
    # Sanitizer build: jemalloc off, benchmarks off, same tests.
    build "$ROOT/build-asan" -DRAMGUARD_SANITIZE=ON -DRAMGUARD_BUILD_BENCH=OFF
    (cd "$ROOT/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure -j 2 --timeout 600 -LE no_sanitize)
    ;;
  bench)
    install_packages
    build "$ROOT/build"
    exec "$ROOT/tests/bench/run_bench.sh" "$ROOT/build"
    ;;
  *)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
