#!/usr/bin/env bash
# Installs the built packages into a clean Debian 12 root made with mmdebstrap (the way
# tests/container makes its base) and, inside it, checks what an operator gets:
#   - the ramguard system user and group, /var/lib/ramguard (ramguard, 0750), the
#     configuration registered as a conffile, ramguardd.service enabled, the man pages;
#   - the daemon, started with the packaged unit's own ExecStartPre/ExecStart lines as the
#     packaged user with the unit's ambient capabilities, answers `ramguard hello`;
#   - a coordinator of another user (a member of the ramguard group) runs guarded through the
#     installed Python package and gets its run's exact peak back;
#   - the daemon stops on SIGTERM with status 0 and no process is left in the root;
#   - dpkg --purge leaves no file behind: only the ramguard user and group stay (Debian's
#     practice for system users).
# No systemd runs in the root (mmdebstrap's chroot), so the test starts the unit's commands
# itself; `systemd-analyze verify` of the same unit runs in tests/deploy.
#
#   debian_install.sh PACKAGE_DIR
#
# Bounded, so that CI can run it unattended: mmdebstrap (and the test inside its root) gets
# RAMGUARD_INSTALL_TEST_SECONDS (default 600) and is then stopped (TERM, KILL 15 s later);
# every step inside has its own timeout. Afterwards any process still running in the root is
# named, killed, and fails the test; mounts left under the work directory are undone. A failure
# prints what failed and exits 1; exit 77 (skip) only where this machine cannot chroot (not root).
set -euo pipefail
export LC_ALL=C.UTF-8

if [ $# -ne 1 ]; then
  echo "usage: $0 PACKAGE_DIR" >&2
  exit 2
fi
pkgdir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
budget_seconds=${RAMGUARD_INSTALL_TEST_SECONDS:-600}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
command -v mmdebstrap >/dev/null || fail "mmdebstrap not found (dev.sh installs it)"
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: making and entering a Debian root needs root"
  exit 77
fi
debs=("$pkgdir"/ramguard_*.deb "$pkgdir"/python3-ramguard_*.deb "$pkgdir"/libramguard-dev_*.deb)
for deb in "${debs[@]}"; do [ -f "$deb" ] || fail "no package $deb (run ./dev.sh package)"; done

# The root has the packages' dependencies before the snapshot, so that the comparison after the
# purge sees only what our packages did. Names from the packages' own Depends fields.
deps=$(for deb in "${debs[@]}"; do dpkg-deb -f "$deb" Depends; echo ,; done |
  tr ',' '\n' | sed -e 's/(.*)//' -e 's/|.*//' -e 's/[[:space:]]//g' -e 's/:any$//' | grep -v '^$' | sort -u |
  grep -vx -e ramguard -e python3-ramguard -e libramguard-dev | paste -sd, -)
echo "dependencies from the packages: $deps"

sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || fail "no apt sources in /etc/apt to make the root from"

work=$(mktemp -d /tmp/ramguard-debian-install.XXXXXX)
# Processes whose root directory is inside $work (mmdebstrap makes its root there: TMPDIR).
processes_in_root() {
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    case $r in "$work"/*) echo "${p#/proc/}" ;; esac
  done
}
# Runs on every exit, also after a timeout or a signal: nothing may outlive the test, neither
# processes in the root (they would keep mmdebstrap's hook socket open) nor mounts.
cleanup() {
  local rc=$? pids mounts
  trap - EXIT
  mapfile -t pids < <(processes_in_root)
  if [ ${#pids[@]} -gt 0 ]; then
    echo "FAIL: processes left in the Debian root, killed now:" >&2
    ps -o pid,user,stat,args -p "$(IFS=,; echo "${pids[*]}")" >&2 || true
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 1
    rc=1
  fi
  # Deepest first; lazy, so a busy mount cannot block the exit.
  mounts=$(cut -d' ' -f2 /proc/mounts | grep "^$work/" | sort -r || true)
  for m in $mounts; do timeout 30 umount -l "$m" || echo "could not unmount $m" >&2; done
  if cut -d' ' -f2 /proc/mounts | grep -q "^$work/"; then
    echo "FAIL: mounts left under $work; not removing it" >&2
    rc=1
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted" >&2; exit 143' TERM INT HUP

cp "${debs[@]}" "$work/"
cp "$here/debian_install_inside.sh" "$work/inside.sh"

# init-system-helpers: deb-systemd-helper, which enables the unit (as on any Debian system);
# util-linux: setpriv, which starts the daemon as the unit would.
# The output goes to a file, not a pipe: nothing in the root can hold this script's output open.
start=$SECONDS
rc=0
TMPDIR=$work PATH=/usr/sbin:/usr/bin:/sbin:/bin timeout --kill-after=15 "$budget_seconds" \
  mmdebstrap --quiet --variant=apt --format=null \
  --include="$deps,init-system-helpers,util-linux" \
  --dpkgopt=force-unsafe-io \
  --setup-hook='mkdir -p "$1/etc/apt/apt.conf.d" && cp -a /etc/apt/apt.conf.d/. "$1/etc/apt/apt.conf.d/"' \
  --customize-hook="mkdir -p \"\$1/tmp/debs\" && cp $work/*.deb $work/inside.sh \"\$1/tmp/debs/\"" \
  --customize-hook='chroot "$1" bash /tmp/debs/inside.sh /tmp/debs' \
  bookworm /dev/null "${sources[@]}" </dev/null >"$work/log" 2>&1 || rc=$?
grep -v '^I: ' "$work/log" || true
case $rc in
  0) ;;
  124 | 137) fail "the install test did not finish within $budget_seconds s (stopped; output above)" ;;
  *) fail "mmdebstrap exited $rc: the install test inside the Debian root failed (output above)" ;;
esac
grep -q '^inside: passed' "$work/log" || fail "the install test inside the Debian root did not pass (output above)"
echo "debian install test passed in $((SECONDS - start)) s"
