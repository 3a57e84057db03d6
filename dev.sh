#!/usr/bin/env bash
# ramguard's one entry point for people and CI. Each command installs missing Debian packages
# (idempotently), configures and builds (Ninja, ccache when present), then does its job.
#
#   ./dev.sh demo          the daemon on its embedded defaults guarding a real coordinator-like process
#   ./dev.sh test          every check CI runs, stage by stage (timings at the end):
#                          format, build + tests (warnings are errors), ASan+UBSan build + tests,
#                          TSan build + the threaded tests, libFuzzer targets (clang) for 60 s each,
#                          and the packagers' build: the Debian packages (default options,
#                          Debian's flags), linted, installed into a clean Debian 12 root
#   ./dev.sh test --quick  format, build + tests only
#   ./dev.sh bench         the benchmarks (figures, not pass/fail)
#   ./dev.sh package       the Debian packages (ramguard, libramguard-dev, python3-ramguard)
#                          into build/packages/, checked with lintian, and the Python client's
#                          wheel (pip install --no-index build/packages/ramguard-*.whl)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD

# What each command installs (Debian 12 packages), so a newcomer's demo does not wait for Slurm,
# podman and lintian. `test` installs all three lists, `test --quick` the first two.
# Building the daemon, the CLI and the clients:
BUILD_PACKAGES=(build-essential cmake ninja-build pkg-config ccache python3
  libasio-dev prometheus-cpp-dev libcivetweb-dev libyaml-cpp-dev libjemalloc-dev libprotobuf-dev
  protobuf-compiler libsqlite3-dev)
# The demo's coordinators and its scrape:
DEMO_PACKAGES=(python3-torch python3-torchvision curl)
# The tests of the normal build: GoogleTest and Google Benchmark, the real Prometheus,
# Alertmanager and promtool, a one-node Slurm, podman for the container, the chart's renderer
# (rsvg-convert), headless Chromium for the run page, the Python package's offline build and
# type check, the man pages' check.
TEST_PACKAGES=(clang-format libgtest-dev libgmock-dev libbenchmark-dev
  prometheus prometheus-alertmanager python3-jsonschema socat util-linux
  podman mmdebstrap runc
  libslurm-dev slurm-wlm slurmctld slurmd slurm-client munge
  librsvg2-bin chromium
  python3-setuptools python3-build python3-wheel python3-installer python3-venv mypy groff)
# The sanitizer and fuzz builds (clang) and the Debian packages (debhelper, pybuild, lintian):
FULL_PACKAGES=(clang-14 libclang-rt-14-dev
  debhelper dh-python python3-all pybuild-plugin-pyproject lintian)

# Tests whose code runs on several threads: the metrics exporter (scraped by civetweb's
# threads), the C++ client called from many threads, admission with 64 racing threads,
# the census placer's worker.
TSAN_TARGETS=(metrics_test client_test admission_test store_test sampling_test)
TSAN_TESTS='^(MetricsExporter|Exposition|Client|AdmissionRace|WalCheckpointer|WalWriteVfs|StoreReader|CensusPlacer|PssReader)\.'
FUZZ_TARGETS=(fuzzers)  # every ramguard_fuzzer() in tests/fuzz/CMakeLists.txt
FUZZ_SECONDS=60

# install_packages PACKAGE...: the ones not installed yet, in one apt-get call.
install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dev.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Paths inside the tree are hashed relative to it, so a second clone (CI's, a worktree) reuses
# the objects of the first.
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=true

# configure DIR [extra cmake args...]: RelWithDebInfo, warnings are errors, unless args override.
configure() {
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAMGUARD_WERROR=ON \
    "${LAUNCHER[@]}" "$@" >/dev/null
}

# build DIR [targets...] (all when none)
build() {
  local dir=$1
  shift
  if [ $# -gt 0 ]; then
    cmake --build "$dir" -j "$(nproc)" --target "$@"
  else
    cmake --build "$dir" -j "$(nproc)"
  fi
}

# Each stage's name and seconds, printed at the end (and when a stage fails).
TIMINGS=()
stage() {
  local name=$1 start=$SECONDS
  shift
  echo "=== dev.sh: $name" >&2
  "$@"
  TIMINGS+=("$(printf '%-10s %5d s' "$name" $((SECONDS - start)))")
}
report_timings() {
  [ ${#TIMINGS[@]} -gt 0 ] && printf 'dev.sh: %s\n' "${TIMINGS[@]}" >&2
  return 0
}

# The tracked C++ sources follow .clang-format.
format_check() {
  git ls-files -z '*.cpp' '*.hpp' '*.h' '*.cc' | xargs -0 clang-format --dry-run --Werror
  echo "format: ok"
}

normal_tests() {
  configure "$ROOT/build" -DRAMGUARD_BUILD_TESTS=ON
  build "$ROOT/build"
  (cd "$ROOT/build" && ctest --output-on-failure -j 2 --timeout 300)
}

# Sanitizer builds compile at -O1 with line tables only: half the compile time of -O2 -g, which
# keeps CI within its time on two cores; reports still name file and line.
SANITIZER_FLAGS=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DRAMGUARD_BUILD_BENCH=OFF)

# ASan+UBSan: jemalloc off, benchmarks off, the same tests (memchild stays unsanitized).
asan_tests() {
  configure "$ROOT/build-asan" -DRAMGUARD_SANITIZE=ON "${SANITIZER_FLAGS[@]}"
  build "$ROOT/build-asan"
  (cd "$ROOT/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --output-on-failure -j 2 --timeout 600 -LE no_sanitize)
}

tsan_tests() {
  configure "$ROOT/build-tsan" -DRAMGUARD_SANITIZE=thread "${SANITIZER_FLAGS[@]}"
  build "$ROOT/build-tsan" "${TSAN_TARGETS[@]}"
  (cd "$ROOT/build-tsan" &&
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$ROOT/tests/tools/tsan.supp" \
      ctest --output-on-failure -j 2 --timeout 600 --no-tests=error -R "$TSAN_TESTS")
}

fuzz_runs() {
  configure "$ROOT/build-fuzz" -DCMAKE_CXX_COMPILER=clang++-14 -DRAMGUARD_BUILD_BENCH=OFF \
    -DRAMGUARD_FUZZ_SECONDS=$FUZZ_SECONDS
  build "$ROOT/build-fuzz" "${FUZZ_TARGETS[@]}"
  (cd "$ROOT/build-fuzz" && ctest --output-on-failure -j 2 --no-tests=error -L fuzz)
}

# The Debian packages, built by dpkg-buildpackage from a copy of the tracked (and new, not
# ignored) files in build/packages/src, so that the tree stays clean; the .debs land in
# build/packages/ and lintian checks them (default profile: errors and warnings fail). This is
# also the packagers' build: default options (warnings are not errors), Debian's flags (-O2,
# hardening), only the shipped targets; its compiler warnings are counted, not fatal (GCC 12
# has optimisation-only false positives).
package_debs() {
  local out=$ROOT/build/packages
  # The source is copied to one fixed place: Debian's flags map its path in every compile
  # (-ffile-prefix-map), so a fixed path lets ccache reuse objects across clones.
  local src=/var/tmp/ramguard-package/ramguard
  rm -rf "$out" "$(dirname "$src")"
  mkdir -p "$src" "$out"
  git -C "$ROOT" ls-files -z --cached --others --exclude-standard -- . ':!tests' ':!Testing' |
    (cd "$ROOT" && xargs -0 cp --parents -a -t "$src" 2>/dev/null || true)
  [ -f "$src/debian/rules" ] || { echo "dev.sh: could not copy the tree to $src" >&2; return 1; }
  # Debian's python3 and tools: a python3 earlier on PATH (pyenv) lacks python3-build.
  (cd "$src" && PATH=/usr/sbin:/usr/bin:/sbin:/bin DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" \
    dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1) || {
    tail -n 40 "$out/build.log"
    echo "dev.sh: dpkg-buildpackage failed; the log is $out/build.log" >&2
    return 1
  }
  mv "$(dirname "$src")"/*.deb "$out"/
  local warnings
  warnings=$(grep -c "warning:" "$out/build.log" || true)
  [ "$warnings" -eq 0 ] || echo "dev.sh: the package build printed $warnings warning(s); see $out/build.log" >&2
  lintian --fail-on error,warning "$out"/*.deb
  ls -l "$out"/*.deb
}

# The Python client's wheel next to the .debs, for `pip install --no-index` into any venv
# (client/python/build_wheel.sh; tests/packaging/python_package.sh installs the same build).
package_wheel() {
  "$ROOT/client/python/build_wheel.sh" "$ROOT/build/packages"
}

# What the demo runs (tests/demo/run_demo.sh): the daemon and the CLI, nothing else.
DEMO_TARGETS=(ramguardd ramguard)

# The packages as an operator gets them: built with Debian's flags, lintian-clean, installed into
# a clean Debian 12 root, run, purged (tests/packaging/debian_install.sh, about a minute; it
# bounds itself: 600 s, then it stops everything it started in the root and fails).
package_tests() {
  package_debs
  "$ROOT/tests/packaging/debian_install.sh" "$ROOT/build/packages"
}

cmd=${1:-}
case "$cmd" in
  package)
    install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" "${FULL_PACKAGES[@]}"
    package_debs
    package_wheel
    ;;
  demo)
    install_packages "${BUILD_PACKAGES[@]}" "${DEMO_PACKAGES[@]}"
    # Without the tests GoogleTest and Benchmark are not needed; `test` turns them back on.
    configure "$ROOT/build" -DRAMGUARD_BUILD_TESTS=OFF
    build "$ROOT/build" "${DEMO_TARGETS[@]}"
    exec "$ROOT/tests/demo/run_demo.sh" "$ROOT/build"
    ;;
  test)
    trap report_timings EXIT
    if [ "${2:-}" = "--quick" ]; then
      stage install install_packages "${BUILD_PACKAGES[@]}" "${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    else
      stage install install_packages "${BUILD_PACKAGES[@]}" "${DEMO_PACKAGES[@]}" \
        "${TEST_PACKAGES[@]}" "${FULL_PACKAGES[@]}"
    fi
    stage format format_check
    stage build+test normal_tests
    [ "${2:-}" = "--quick" ] && exit 0
    stage asan asan_tests
    stage tsan tsan_tests
    stage fuzz fuzz_runs
    stage packages package_tests
    ;;
  bench)
    # prometheus-process-exporter: the peer of peer_bench.sh; not needed by CI.
    install_packages "${BUILD_PACKAGES[@]}" "${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}" \
      prometheus-process-exporter
    configure "$ROOT/build" -DRAMGUARD_BUILD_TESTS=ON
    build "$ROOT/build"
    "$ROOT/tests/bench/run_bench.sh" "$ROOT/build"
    # The peer, on the same 1,000 processes.
    exec "$ROOT/tests/bench/peer_bench.sh" "$ROOT/build" 1000 60
    ;;
  *)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
