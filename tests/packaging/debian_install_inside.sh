#!/usr/bin/env bash
# Runs inside the clean Debian 12 root of debian_install.sh (as root, no systemd running).
#   debian_install_inside.sh DEB_DIR
set -euo pipefail
debs=$1
fail() {
  echo "inside: FAIL: $*"
  exit 1
}
# Every file of the root except what changes anyway (package database, logs, caches) and the
# user database (checked on its own).
snapshot() {
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
    -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/log -o -path /var/cache \) -prune \
    -o -print | grep -vxE '/etc/(passwd|group|shadow|gshadow|subuid|subgid)-?' | sort
}
snapshot >/tmp/before

DEBIAN_FRONTEND=noninteractive dpkg -i "$debs"/*.deb >/tmp/dpkg.log 2>&1 || {
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
as_unit() { # the unit's user, group and ambient capabilities
  setpriv --reuid=ramguard --regid=ramguard --init-groups --inh-caps="$caps" --ambient-caps="$caps" \
    --no-new-privs "$@"
}
# RuntimeDirectory=ramguard, RuntimeDirectoryMode=0755, as systemd makes it.
install -d -o ramguard -g ramguard -m 0755 /run/ramguard
read -r -a pre <<<"$(unit_value ExecStartPre)"
as_unit "${pre[@]}" >/tmp/check.log 2>&1 || {
  cat /tmp/check.log
  fail "ExecStartPre (--check-config of the packaged configuration) failed"
}
read -r -a start <<<"$(unit_value ExecStart)"
# The packaged configuration listens on 127.0.0.1:9797; port 0 keeps the host's port free.
as_unit "${start[@]}" --metrics 127.0.0.1:0 >/tmp/daemon.log 2>&1 &
daemon=$!
for _ in $(seq 100); do
  [ -S /run/ramguard/ramguard.sock ] && break
  kill -0 "$daemon" 2>/dev/null || { cat /tmp/daemon.log; fail "ramguardd exited"; }
  sleep 0.1
done
[ -S /run/ramguard/ramguard.sock ] || { cat /tmp/daemon.log; fail "no socket within 10 s"; }
uid=$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$daemon/status")
[ "$uid" = "$(id -u ramguard)" ] || fail "ramguardd runs as UID $uid, not ramguard"
grep -q '^CapAmb:.*[1-9a-f]' "/proc/$daemon/status" || fail "ramguardd has no ambient capability"
hello=$(ramguard hello) || { cat /tmp/daemon.log; fail "ramguard hello did not answer"; }
echo "inside: ramguardd runs as ramguard (UID $uid); ramguard hello: $hello"

# --- a coordinator of another user, in the ramguard group, through the installed package ---
adduser --quiet --disabled-password --gecos "" trainer
adduser --quiet trainer ramguard
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
setpriv --reuid=trainer --regid=trainer --init-groups env -i PATH=/usr/bin:/bin \
  RAMGUARD_SOCKET=/run/ramguard/ramguard.sock python3 /tmp/coordinator.py ||
  { cat /tmp/daemon.log; fail "the guarded Python coordinator failed"; }
deluser --quiet trainer >/dev/null
rm -rf /home/trainer

kill -TERM "$daemon"
wait "$daemon" || fail "ramguardd exited $? on SIGTERM"
[ -s /var/lib/ramguard/ramguard.db ] || fail "no ledger in /var/lib/ramguard"

# --- purge ---
DEBIAN_FRONTEND=noninteractive dpkg --purge ramguard python3-ramguard libramguard-dev \
  >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg --purge failed"; }
snapshot >/tmp/after
if ! diff -u /tmp/before /tmp/after >/tmp/leftovers; then
  cat /tmp/leftovers
  fail "dpkg --purge left files behind (diff above)"
fi
getent passwd ramguard >/dev/null || fail "the ramguard user was removed (Debian keeps system users)"
echo "inside: purged; no file left, the ramguard user and group stay"
echo "inside: passed"
