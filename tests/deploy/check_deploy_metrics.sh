#!/usr/bin/env bash
# check_deploy_metrics.sh SAMPLE_BINARY PROMTOOL PYTHON3 CHECK_SCRIPT FILE...
# Scrapes the exporter (populated), lints the scrape with promtool (exit 0, no output), then
# checks that every ramguard_* name in FILE... is served.
set -euo pipefail
sample=$1 promtool=$2 python=$3 check=$4
shift 4
scrape=$(mktemp)
trap 'rm -f "$scrape"' EXIT
"$sample" >"$scrape"
lint=$("$promtool" check metrics <"$scrape" 2>&1) || {
  echo "promtool check metrics failed: $lint"
  exit 1
}
if [ -n "$lint" ]; then
  echo "promtool check metrics printed warnings: $lint"
  exit 1
fi
echo "promtool: scrape of $(grep -c '^ramguard_' "$scrape") ramguard samples is clean"
exec "$python" "$check" "$scrape" "$@"
