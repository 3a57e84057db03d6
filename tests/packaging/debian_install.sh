#!/usr/bin/env bash
# Installs the built packages into a clean Debian 12 root made with mmdebstrap (the way
# tests/container makes its base) and, inside it, checks what an operator gets:
#   - the ramguard system user and group, /var/lib/ramguard (ramguard, 0750), the
#     configuration registered as a conffile, ramguardd.service enabled, the man pages;
#   - the daemon, started with the packaged unit's own ExecStartPre/ExecStart lines as the
#     packaged user with the unit's ambient capabilities, answers `ramguard hello`;
#   - a coordinator of another user (a member of the ramguard group) runs guarded through the
#     installed Python package and gets its run's exact peak back;
#   - dpkg --purge leaves no file behind: only the ramguard user and group stay (Debian's
#     practice for system users).
# No systemd runs in the root (mmdebstrap's chroot), so the test starts the unit's commands
# itself; `systemd-analyze verify` of the same unit runs in tests/deploy.
#
#   debian_install.sh PACKAGE_DIR
#
# Exit 77 (skip) only where this machine cannot chroot (not root).
set -euo pipefail
export LC_ALL=C.UTF-8

if [ $# -ne 1 ]; then
  echo "usage: $0 PACKAGE_DIR" >&2
  exit 2
fi
pkgdir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
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
trap 'rm -rf "$work"' EXIT
cp "${debs[@]}" "$work/"
cp "$here/debian_install_inside.sh" "$work/inside.sh"

# init-system-helpers: deb-systemd-helper, which enables the unit (as on any Debian system);
# util-linux: setpriv, which starts the daemon as the unit would.
start=$SECONDS
PATH=/usr/sbin:/usr/bin:/sbin:/bin mmdebstrap --quiet --variant=apt --format=null \
  --include="$deps,init-system-helpers,util-linux" \
  --dpkgopt=force-unsafe-io \
  --setup-hook='mkdir -p "$1/etc/apt/apt.conf.d" && cp -a /etc/apt/apt.conf.d/. "$1/etc/apt/apt.conf.d/"' \
  --customize-hook="mkdir -p \"\$1/tmp/debs\" && cp $work/*.deb $work/inside.sh \"\$1/tmp/debs/\"" \
  --customize-hook='chroot "$1" bash /tmp/debs/inside.sh /tmp/debs' \
  bookworm /dev/null "${sources[@]}" 2>&1 | tee "$work/log" | grep -v '^I: ' || true
grep -q '^inside: passed' "$work/log" || fail "the install test inside the Debian root failed (output above)"
echo "debian install test passed in $((SECONDS - start)) s"
