#!/usr/bin/env bash
# Side by side with the peer: ramguardd and Debian's prometheus-process-exporter watch the same
# N sleeping processes at the same 2 s cadence, both scraped every 2 s, for WINDOW seconds.
# Prints each one's CPU per process-sample, share of a core and RSS, and the ratio.
#
#   peer_bench.sh BUILD_DIR [N=1000] [WINDOW_SECONDS=60]
#
# ramguardd samples on its own 2 s timer; process-exporter reads /proc when scraped, so the
# 2 s scrape is its cadence. Both are configured to keep one series set per process
# (process-exporter: one group per PID). Figures only: nothing here passes or fails.
set -euo pipefail
build=${1:?usage: peer_bench.sh BUILD_DIR [N] [WINDOW_SECONDS]}
n=${2:-1000}
window=${3:-60}
daemon="$build/daemon/ramguardd"
peer=$(command -v prometheus-process-exporter || true)
[ -x "$daemon" ] || { echo "peer_bench.sh: no $daemon (build first)" >&2; exit 1; }
[ -n "$peer" ] || { echo "peer_bench.sh: prometheus-process-exporter is not installed" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The watched processes: one name to find them by, nothing else to do.
sleepers=()
for _ in $(seq "$n"); do
  bash -c 'exec -a ramguard-peer-sleeper sleep 100000' &
  sleepers+=($!)
done
pids+=("${sleepers[@]}")

daemon_port=$(free_port)
{
  echo "sampling: { interval: 2s${PEER_BENCH_PEAK_REFRESH:+, watch_peak_refresh: $PEER_BENCH_PEAK_REFRESH} }"
  echo "metrics: { listen: \"127.0.0.1:$daemon_port\", max_targets: $((n + 64)) }"
  echo "watch:"
  for p in "${sleepers[@]}"; do echo "  - $p"; done
} >"$tmp/ramguard.yaml"
"$daemon" --config "$tmp/ramguard.yaml" --socket "$tmp/ramguard.sock" --state-dir "$tmp/state" \
  >"$tmp/ramguardd.log" 2>&1 &
daemon_pid=$!
[ -n "${PEER_BENCH_PERF:-}" ] && (sleep 20; perf record ${PEER_BENCH_PERF_ARGS:-} -g -p "$daemon_pid" -o "$PEER_BENCH_PERF" -- sleep 30 >/dev/null 2>&1) &
pids+=("$daemon_pid")

peer_port=$(free_port)
cat >"$tmp/process-exporter.yaml" <<'EOF'
process_names:
  - name: "{{.PID}}"
    cmdline: ['^ramguard-peer-sleeper']
EOF
# smaps and per-thread metrics off: ramguardd reads neither on its periodic path.
"$peer" -config.path "$tmp/process-exporter.yaml" -web.listen-address "127.0.0.1:$peer_port" \
  -gather-smaps=false -threads=false >"$tmp/peer.log" 2>&1 &
peer_pid=$!
pids+=("$peer_pid")

# Wait until both serve every process.
for _ in $(seq 100); do
  a=$(curl -sf "http://127.0.0.1:$daemon_port/metrics" | grep -c '^ramguard_target_rss_bytes{' || true)
  b=$(curl -sf "http://127.0.0.1:$peer_port/metrics" | grep -c '^namedprocess_namegroup_num_procs{' || true)
  [ "$a" -ge "$n" ] && [ "$b" -ge "$n" ] && break
  sleep 0.5
done
echo "series: ramguardd $a targets, process-exporter $b groups (of $n processes)"

cpu_seconds() {  # CPU time of all of PID's threads, in seconds (schedstat: nanoseconds, not ticks)
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ ns += $1 } END { printf "%.6f\n", ns / 1e9 }'
}
# ramguardd's CPU by thread name: its main thread samples, civetweb's threads serve scrapes.
threads_cpu() {
  for t in /proc/"$1"/task/*; do
    printf '%s\t%s\n' "$(cat "$t/comm" 2>/dev/null)" "$(awk '{ print $1 / 1e9 }' "$t/schedstat" 2>/dev/null)"
  done | awk -F'\t' '$2 != "" { s[$1] += $2 } END { for (c in s) printf "%s=%s ", c, s[c] }'
}
# VmRSS and its split: anonymous memory is the process's own; file pages are mostly the binary
# and its libraries, the same at idle.
rss_mib() {
  awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
       END { printf "%.1f MiB (anon %.1f, file %.1f)", r / 1024, a / 1024, f / 1024 }' "/proc/$1/status"
}

d0=$(cpu_seconds "$daemon_pid")
t0=$(threads_cpu "$daemon_pid")
p0=$(cpu_seconds "$peer_pid")
scrapes=0
end=$((SECONDS + window))
while [ "$SECONDS" -lt "$end" ]; do
  curl -sf -o /dev/null "http://127.0.0.1:$daemon_port/metrics" &
  c1=$!
  curl -sf -o /dev/null "http://127.0.0.1:$peer_port/metrics" &
  c2=$!
  sleep 2 &  # a 2 s cadence, however long a scrape takes
  c3=$!
  wait "$c1" "$c2" "$c3" || true
  scrapes=$((scrapes + 1))
done
d1=$(cpu_seconds "$daemon_pid")
# The physical limit, measured on the same processes after the window: one status pread each
# (what a periodic reading reads), and one statm pread each for reference.
limit_us=$("$build/tests/bench/proc_read_limit" status 20 "${sleepers[@]}")
statm_us=$("$build/tests/bench/proc_read_limit" statm 20 "${sleepers[@]}")
t1=$(threads_cpu "$daemon_pid")
p1=$(cpu_seconds "$peer_pid")

python3 - "$n" "$window" "$scrapes" "$d0" "$d1" "$p0" "$p1" "$(rss_mib "$daemon_pid")" \
  "$(rss_mib "$peer_pid")" "$t0" "$t1" "$limit_us" "$statm_us" <<'EOF'
import sys
n, window, scrapes = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
d = float(sys.argv[5]) - float(sys.argv[4])
p = float(sys.argv[7]) - float(sys.argv[6])
d_rss, p_rss = sys.argv[8], sys.argv[9]
def threads(text):
    return {k: float(v) for k, v in (kv.split("=") for kv in text.split())}
t0, t1 = threads(sys.argv[10]), threads(sys.argv[11])
by_thread = {k: t1[k] - t0.get(k, 0.0) for k in t1}
samples = n * window / 2.0  # both read every process once per 2 s
def row(name, cpu, rss):
    print(f"{name:<26} cpu {cpu:6.2f} s  {cpu / samples * 1e6:8.1f} us/process-sample  "
          f"{cpu / window * 100:6.2f}% of a core  RSS {rss}")
print(f"{n} processes, {window:.0f} s window, {scrapes} scrapes each")
row("ramguardd", d, d_rss)
sampling = by_thread.get("ramguardd", 0.0)
serving = sum(v for k, v in by_thread.items() if k.startswith("civetweb"))
print(f"  of which sampling (main thread) {sampling:.2f} s = {sampling / samples * 1e6:.1f} "
      f"us/process-sample, {sampling / window * 100:.2f}% of a core; serving scrapes "
      f"(civetweb) {serving:.2f} s = {serving / max(scrapes, 1) * 1e3:.1f} ms/scrape")
row("prometheus-process-exporter", p, p_rss)
print(f"ratio ramguardd / process-exporter per process-sample: {d / p:.3f}" if p > 0 else
      "ratio: process-exporter used no measurable CPU")
limit, statm = float(sys.argv[12]), float(sys.argv[13])
print(f"physical limit (one pread of a kept-open status per process): {limit:.2f} us "
      f"(statm: {statm:.2f} us); ramguardd / limit = {d / samples * 1e6 / limit:.1f}, "
      f"process-exporter / limit = {p / samples * 1e6 / limit:.1f}")
EOF
