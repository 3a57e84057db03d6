#!/usr/bin/env bash
# The README's main command (./dev.sh demo): ramguard doing its job on the ViT-H/14
# coordinator investigation described in daemon/README.md.
#
#   tests/demo/run_demo.sh BUILD_DIR [OUT_DIR]
#
# Starts ramguardd (deploy/demo/ramguard.demo.yaml: the default thresholds / 10) on a temp
# socket and state directory with metrics on a free port, then runs a simulated coordinator
# (tests/demo/coordinator.py, a real Python process holding real memory) twice: the baseline
# build and the final build of that investigation at one tenth of the size, each admitted
# against the budget first. The daemon's log is followed and printed as it happens. Then
# `ramguard compare` of the two runs and `ramguard report RUN --svg` for each (and for the
# PyTorch runs, when torch is installed). Reports and SVG charts stay in
# OUT_DIR (default BUILD_DIR/demo); everything else is removed and the daemon is stopped with
# SIGTERM. Peak memory: about 3 GB (the baseline build), for about a minute.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
  exit 2
fi
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "${2:-$BUILD/demo}"
OUT=$(cd "${2:-$BUILD/demo}" && pwd)
DAEMON=$BUILD/daemon/ramguardd
CLI=$BUILD/client/cli/ramguard
PYTHON=/usr/bin/python3
CONFIG=$ROOT/deploy/demo/ramguard.demo.yaml
for f in "$DAEMON" "$CLI" "$PYTHON"; do
  [ -x "$f" ] || { echo "run_demo.sh: $f is missing; build first (./dev.sh demo)" >&2; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ramguard-demo.XXXXXX")
SOCK=$TMP/ramguard.sock
LOG=$TMP/ramguardd.log
DAEMON_PID=""
FOLLOW_PID=""
TORCH_DAEMON_PID=""

cleanup() {
  local status=$?
  if [ "$status" -ne 0 ] && [ -f "$LOG" ]; then
    echo "run_demo.sh: failed (exit $status); the daemon's last log lines:" >&2
    tail -n 20 "$LOG" >&2
  fi
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  if [ -n "$TORCH_DAEMON_PID" ] && kill -0 "$TORCH_DAEMON_PID" 2>/dev/null; then
    kill -TERM "$TORCH_DAEMON_PID" 2>/dev/null || true
    wait "$TORCH_DAEMON_PID" 2>/dev/null || true
  fi
  if [ -n "$FOLLOW_PID" ]; then
    kill -TERM "$FOLLOW_PID" 2>/dev/null || true
    wait "$FOLLOW_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }
section() { printf '\n== %s ==\n' "$*"; }

# Wait (up to 10 s) until the log follower has printed everything the daemon has written.
sync_log() {
  local size printed
  for _ in $(seq 200); do
    size=$(stat -c %s "$LOG")
    printed=$(cat "$TMP/follow.offset" 2>/dev/null || echo 0)
    [ "$printed" -ge "$size" ] && return 0
    sleep 0.05
  done
}

rg() { "$CLI" --socket "$SOCK" "$@"; }

SECONDS=0
section "ramguard demo: the investigation's baseline and final builds, replayed at 1/10 of the size"
say "ramguardd guards a simulated coordinator: 3 rounds, 2 hosts, one model copy = 0.25 GB."
say "Thresholds in model copies scale with the run (deploy/demo/ramguard.demo.yaml):"
say "  budget 1.6 GB, growth warning at +0.2 copies/round, release slack 0.4 copies within 5 s,"
say "  aggregation.end -> synchronization.begin <= 1 s, fedavg plan overhead 0.11 GB."

"$DAEMON" --config "$CONFIG" --socket "$SOCK" --state-dir "$TMP/state" 2>"$LOG" &
DAEMON_PID=$!
PORT=""
for _ in $(seq 200); do
  PORT=$(sed -n 's/.*event=daemon.ready .*metrics_port=\([0-9]*\).*/\1/p' "$LOG" | head -n 1)
  [ -n "$PORT" ] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$LOG" >&2; echo "ramguardd exited" >&2; exit 1; }
  sleep 0.05
done
[ -n "$PORT" ] || { cat "$LOG" >&2; echo "ramguardd did not get ready" >&2; exit 1; }
METRICS=http://127.0.0.1:$PORT/metrics
say "ramguardd pid $DAEMON_PID, socket $SOCK"
say "metrics: $METRICS"
"$PYTHON" -u "$ROOT/tests/demo/follow_log.py" "$LOG" "$TMP/follow.offset" &
FOLLOW_PID=$!

export RAMGUARD_SOCKET=$SOCK
export PYTHONDONTWRITEBYTECODE=1  # keep the source tree clean
run_build() {
  local build=$1
  section "$build build"
  "$PYTHON" -u "$ROOT/tests/demo/coordinator.py" --build "$build" \
    --run-id-file "$TMP/$build.run"
  sync_log
}

run_build baseline
say ""
say "metrics now (curl -s $METRICS | grep ...):"
curl -fsS "$METRICS" >"$TMP/metrics.txt" || say "  (scrape failed: $METRICS)"
grep -E '^ramguard_(budget_bytes|target_peak_bytes|boundary_floor_bytes|verdicts_total)[{ ]' \
  "$TMP/metrics.txt" | grep -v 'severity="info"' | sed 's/^/  /' || true
run_build final

BASELINE_RUN=$(cat "$TMP/baseline.run")
FINAL_RUN=$(cat "$TMP/final.run")
section "ramguard compare $BASELINE_RUN $FINAL_RUN"
rg compare "$BASELINE_RUN" "$FINAL_RUN"

section "reports and charts"
for build in baseline final; do
  run=$(cat "$TMP/$build.run")
  rg report "$run" --svg "$OUT/$build.svg" >/dev/null
  rg report "$run" >"$OUT/$build.txt"
  rg --json report "$run" >"$OUT/$build.json"
  say "ramguard report $run --svg $OUT/$build.svg"
  say "  $build build: chart $OUT/$build.svg, report $OUT/$build.txt (and .json)"
done

# A real PyTorch FedAvg coordinator (client/python/examples/torch_fedavg.py), when Debian's
# python3-torch and python3-torchvision are installed: the same configuration judges it
# unchanged, because its thresholds are in model copies; only the budget is the default
# 16 GB (the replay's 1.6 GB would refuse this Load, as it should). jemalloc is preloaded so
# RSS follows what the coordinator holds (under glibc the floors are judged with the
# allocator facts the client sends; tests/python/test_torch_fedavg.py shows both).
JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
[ -e "$JEMALLOC" ] || JEMALLOC=$(ldconfig -p 2>/dev/null | sed -n 's/.*libjemalloc\.so\.2 .*=> //p' | head -n 1)
if "$PYTHON" -c 'import torch, torchvision' 2>/dev/null && [ -n "$JEMALLOC" ]; then
  section "a real PyTorch FedAvg coordinator: torchvision ViT-B/16, 0.35 GB per model copy"
  TORCH_SOCK=$TMP/torch.sock
  "$DAEMON" --config "$CONFIG" --budget 16GB --socket "$TORCH_SOCK" \
    --state-dir "$TMP/torch-state" 2>"$TMP/torch.log" &
  TORCH_DAEMON_PID=$!
  for _ in $(seq 200); do
    [ -S "$TORCH_SOCK" ] && break
    sleep 0.05
  done
  say "ramguardd pid $TORCH_DAEMON_PID (budget 16 GB, the same thresholds in model copies)"
  for build in baseline final; do
    say "-- $build build"
    RAMGUARD_SOCKET=$TORCH_SOCK LD_PRELOAD=$JEMALLOC MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0 \
      "$PYTHON" -u "$ROOT/client/python/examples/torch_fedavg.py" --build "$build" \
      --rounds 3 --hosts 2 --pause-seconds 0.75 --release-timeout-seconds 30 \
      | tee "$TMP/torch-$build.out" | grep -v '^{'
    # The last line is the run's summary as JSON: its run id gives the chart and the report.
    run=$(tail -n 1 "$TMP/torch-$build.out" \
      | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin).get("run_id", ""))' || true)
    if [ -n "$run" ]; then
      "$CLI" --socket "$TORCH_SOCK" report "$run" --svg "$OUT/torch-$build.svg" >"$OUT/torch-$build.txt"
      say "ramguard report $run --svg $OUT/torch-$build.svg"
    fi
  done
  kill -TERM "$TORCH_DAEMON_PID"
  wait "$TORCH_DAEMON_PID" || true
  TORCH_DAEMON_PID=""
else
  section "a real PyTorch FedAvg coordinator: skipped (install python3-torch, python3-torchvision and libjemalloc2)"
fi

kill -TERM "$DAEMON_PID"
DAEMON_STATUS=0
wait "$DAEMON_PID" || DAEMON_STATUS=$?
DAEMON_PID=""
sync_log
section "done in ${SECONDS} s"
say "ramguardd stopped with SIGTERM (exit $DAEMON_STATUS); its socket and state dir are removed."
charts="$OUT/baseline.svg $OUT/final.svg"
for build in baseline final; do
  [ -f "$OUT/torch-$build.svg" ] && charts="$charts $OUT/torch-$build.svg"
done
say "Open the charts: $charts"
