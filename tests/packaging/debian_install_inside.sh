#!/usr/bin/env bash
# Runs inside the clean Debian 12 root of debian_install.sh (as root, no systemd running).
#   debian_install_inside.sh DEB_DIR
# Every step that could block has a timeout; the daemon runs in the background with its output
# in /tmp/daemon.log and is stopped (TERM, then KILL after 10 s) on every exit, so that nothing
# outlives this script and keeps mmdebstrap waiting on its hook.
set -Eeuo pipefail
debs=$1
daemon=""
fail() {
  echo "inside: FAIL: $*"
  exit 1
}
trap 'echo "inside: FAIL: line $LINENO: \"$BASH_COMMAND\" exited $?"' ERR
trap 'echo "inside: FAIL: interrupted"; exit 143' TERM INT HUP
# mmdebstrap waits for EOF on its hook socket (MMDEBSTRAP_HOOKSOCK) and holds pipes of its own;
# this script inherits them. Nothing here needs them: close every inherited socket and pipe
# beyond stdout and stderr, so that no child of this script can keep the hook waiting.
for fd in "/proc/$$/fd"/*; do
  n=${fd##*/}
  [ "$n" -gt 2 ] || continue
  case $(readlink "$fd" 2>/dev/null) in
    socket:* | pipe:*) eval "exec $n>&-" ;;
  esac
done

is_running() { # a zombie has exited: only its status is left to collect
  local state
  state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}
# stop_daemon: SIGTERM, up to 10 s to exit, then SIGKILL; returns the daemon's exit status.
stop_daemon() {
  local pid=$daemon status=0
  [ -n "$pid" ] || return 0
  daemon=""
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    is_running "$pid" || break
    sleep 0.1
  done
  if is_running "$pid"; then
    echo "inside: ramguardd (PID $pid) still runs 10 s after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" || status=$?
  return "$status"
}
on_exit() {
  local rc=$?
  trap - EXIT ERR
  if [ -n "$daemon" ]; then
    stop_daemon || true
    if [ "$rc" -ne 0 ] && [ -s /tmp/daemon.log ]; then
      echo "inside: the daemon's last output:"
      tail -n 20 /tmp/daemon.log
    fi
  fi
  exit "$rc"
}
trap on_exit EXIT
# Every file of the root except what changes anyway (package database, logs, caches) and the
# user database (checked on its own).
snapshot() {
  timeout 120 find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
    -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/log -o -path /var/cache \) -prune \
    -o -print | grep -vxE '/etc/(passwd|group|shadow|gshadow|subuid|subgid)-?' | sort
}
snapshot >/tmp/before

DEBIAN_FRONTEND=noninteractive timeout 300 dpkg -i "$debs"/*.deb >/tmp/dpkg.log 2>&1 || {
  cat /tmp/dpkg.log
  fail "dpkg -i failed"
}

# --- what the package set up ---
getent passwd ramguard >/dev/null || fail "no ramguard user"
getent group ramguard >/dev/null || fail "no ramguard group"
[ "$(stat -c '%U:%G %a' /var/lib/ramguard)" = "ramguard:ramguard 750" ] ||
  fail "/var/lib/ramguard is $(stat -c '%U:%G %a' /var/lib/ramguard)"
dpkg-query -W -f='${Conffiles}\n' ramguard | grep -q '^ /etc/ramguard/ramguard.yaml ' ||
  fail "/etc/ramguard/ramguard.yaml is not a conffile"
[ -L /etc/systemd/system/multi-user.target.wants/ramguardd.service ] ||
  fail "ramguardd.service is not enabled"
for page in man1/ramguard.1 man5/ramguard.yaml.5 man8/ramguardd.8; do
  [ -s "/usr/share/man/$page.gz" ] || fail "no /usr/share/man/$page.gz"
done
[ -s /usr/lib/python3/dist-packages/ramguard/py.typed ] || [ -f /usr/lib/python3/dist-packages/ramguard/py.typed ] ||
  fail "python3-ramguard has no py.typed"
[ -f /usr/lib/x86_64-linux-gnu/cmake/ramguard/ramguardConfig.cmake ] ||
  [ -n "$(find /usr/lib -path '*/cmake/ramguard/ramguardConfig.cmake' -print -quit)" ] ||
  fail "libramguard-dev has no CMake package"
echo "inside: installed; user, state directory, conffile, enabled unit, man pages, py.typed, CMake package"

# --- the daemon as the packaged unit runs it ---
unit=/lib/systemd/system/ramguardd.service
unit_value() { sed -n "s/^$1=//p" "$unit"; }
[ "$(unit_value User)" = ramguard ] || fail "the unit does not run as ramguard"
caps=$(unit_value AmbientCapabilities | tr 'A-Z ' 'a-z\n' | sed 's/^cap_//' | grep -v '^$' | sed 's/^/+/' | paste -sd, -)
# The unit's user, group and ambient capabilities. An array, not a function: started in the
# background, a function runs in a forked shell and $! would name that shell, not the daemon.
as_unit=(setpriv --reuid=ramguard --regid=ramguard --init-groups --inh-caps="$caps"
  --ambient-caps="$caps" --no-new-privs)
# RuntimeDirectory=ramguard, RuntimeDirectoryMode=0755, as systemd makes it.
install -d -o ramguard -g ramguard -m 0755 /run/ramguard
read -r -a pre <<<"$(unit_value ExecStartPre)"
timeout 30 "${as_unit[@]}" "${pre[@]}" </dev/null >/tmp/check.log 2>&1 || {
  cat /tmp/check.log
  fail "ExecStartPre (--check-config of the packaged configuration) failed"
}
read -r -a start <<<"$(unit_value ExecStart)"
# The packaged configuration listens on 127.0.0.1:9797; port 0 keeps the host's port free.
# setpriv execs the daemon: $! is ramguardd itself.
"${as_unit[@]}" "${start[@]}" --metrics 127.0.0.1:0 </dev/null >/tmp/daemon.log 2>&1 &
daemon=$!
for _ in $(seq 200); do
  [ -S /run/ramguard/ramguard.sock ] && break
  is_running "$daemon" || fail "ramguardd exited before making its socket"
  sleep 0.1
done
[ -S /run/ramguard/ramguard.sock ] || fail "no socket within 20 s"
[ "$(readlink "/proc/$daemon/exe")" = /usr/sbin/ramguardd ] ||
  fail "PID $daemon is $(readlink "/proc/$daemon/exe"), not /usr/sbin/ramguardd"
uid=$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$daemon/status")
[ "$uid" = "$(id -u ramguard)" ] || fail "ramguardd runs as UID $uid, not ramguard"
grep -q '^CapAmb:.*[1-9a-f]' "/proc/$daemon/status" || fail "ramguardd has no ambient capability"
hello=$(timeout 10 ramguard hello </dev/null) || fail "ramguard hello did not answer within 10 s"
echo "inside: ramguardd runs as ramguard (UID $uid); ramguard hello: $hello"

# --- a coordinator of another user, in the ramguard group, through the installed package ---
timeout 60 adduser --quiet --disabled-password --gecos "" trainer </dev/null
timeout 60 adduser --quiet trainer ramguard </dev/null
cat >/tmp/coordinator.py <<'PY'
import sys
import ramguard

assert ramguard.__file__.startswith("/usr/lib/python3/dist-packages/"), ramguard.__file__
client = ramguard.Client(strict=True)
held = []
with client.start_run("package-smoke", declared_rounds=2) as run:
    for _ in range(2):
        with run.phase("aggregation"):
            held.append(bytearray(32 * 1024 * 1024))
        run.round_end()
peak = run.end_reply.peak_bytes
print(f"run {run.run_id}: peak {peak} bytes")
sys.exit(0 if peak >= 64 * 1024 * 1024 else 1)
PY
chmod 0644 /tmp/coordinator.py
timeout 120 setpriv --reuid=trainer --regid=trainer --init-groups env -i PATH=/usr/bin:/bin \
  RAMGUARD_SOCKET=/run/ramguard/ramguard.sock python3 /tmp/coordinator.py </dev/null ||
  fail "the guarded Python coordinator failed (or took over 120 s)"
timeout 60 deluser --quiet trainer </dev/null >/dev/null
rm -rf /home/trainer

status=0
stop_daemon || status=$?
[ "$status" -eq 0 ] || { tail -n 20 /tmp/daemon.log; fail "ramguardd exited $status on SIGTERM"; }
[ -s /var/lib/ramguard/ramguard.db ] || fail "no ledger in /var/lib/ramguard"

# --- purge ---
DEBIAN_FRONTEND=noninteractive timeout 300 dpkg --purge ramguard python3-ramguard libramguard-dev \
  >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg --purge failed"; }
snapshot >/tmp/after
if ! diff -u /tmp/before /tmp/after >/tmp/leftovers; then
  cat /tmp/leftovers
  fail "dpkg --purge left files behind (diff above)"
fi
getent passwd ramguard >/dev/null || fail "the ramguard user was removed (Debian keeps system users)"
echo "inside: purged; no file left, the ramguard user and group stay"
echo "inside: passed"
