#!/usr/bin/env bash
# systemd_verify.sh SYSTEMD_ANALYZE UNIT BINARY
# systemd-analyze verify on the unit, with /usr/sbin/ramguardd pointed at BINARY (verify checks
# that every Exec command exists). Any output (a warning about a key) is a failure.
set -euo pipefail
analyze=$1 unit=$2 binary=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s|/usr/sbin/ramguardd|$binary|g" "$unit" >"$dir/$(basename "$unit")"
out=$(SYSTEMD_LOG_LEVEL=notice "$analyze" verify "$dir/$(basename "$unit")" 2>&1) || {
  echo "systemd-analyze verify failed:"
  echo "$out"
  exit 1
}
if [ -n "$out" ]; then
  echo "systemd-analyze verify printed warnings:"
  echo "$out"
  exit 1
fi
echo "systemd-analyze verify: $(basename "$unit") is clean"
