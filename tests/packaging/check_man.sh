#!/usr/bin/env bash
# The man pages (man/*.[158]) are the source; this keeps them honest against the programs:
#   - groff -man -ww -z prints no warning for any page;
#   - every flag `ramguardd --help` prints is in ramguardd(8);
#   - every command `ramguard help` lists, and every flag it and `ramguard help COMMAND` print,
#     is in ramguard(1);
#   - every key of deploy/ramguard.example.yaml (the file the package installs) is in
#     ramguard.yaml(5).
#
#   check_man.sh SOURCE_DIR RAMGUARDD RAMGUARD
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 SOURCE_DIR RAMGUARDD RAMGUARD" >&2
  exit 2
fi
src=$1 daemon=$2 cli=$3
command -v groff >/dev/null || { echo "FAIL: groff not found (dev.sh installs it)"; exit 1; }
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

for page in "$src"/man/ramguardd.8 "$src"/man/ramguard.1 "$src"/man/ramguard.yaml.5; do
  warnings=$(groff -man -ww -z "$page" 2>&1) || fail "groff failed on $page"
  [ -z "$warnings" ] || fail "groff warns on $(basename "$page"):"$'\n'"$warnings"
done

# The page's words as a reader sees them: roff escapes for '-' and fonts removed.
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(ti/~/g' "$1"; }
flags() { grep -oE -- '(^|[^a-z-])--?[a-z][a-z0-9-]*' | grep -oE -- '--?[a-z][a-z0-9-]*' | sort -u; }
# in_page PAGE WORD: WORD appears as a whole token (not as the prefix of a longer flag). The
# page is read whole first: grep -q stopping early would fail the pipe (pipefail).
in_page() {
  local text
  text=$(plain "$1")
  grep -qE -- "(^|[^a-z0-9_-])$2([^a-z0-9_-]|$)" <<<"$text"
}

checked=0
for flag in $("$daemon" --help | flags); do
  checked=$((checked + 1))
  in_page "$src/man/ramguardd.8" "$flag" || fail "ramguardd --help prints $flag; ramguardd(8) does not"
done
echo "ramguardd(8): $checked flags of --help checked"

checked=0
commands=$("$cli" help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$commands" ] || fail "ramguard help lists no command"
for flag in $("$cli" help | flags); do
  checked=$((checked + 1))
  in_page "$src/man/ramguard.1" "$flag" || fail "ramguard help prints $flag; ramguard(1) does not"
done
for command in $commands; do
  in_page "$src/man/ramguard.1" "$command" || fail "ramguard help lists $command; ramguard(1) does not"
  for flag in $("$cli" help "$command" | flags); do
    checked=$((checked + 1))
    in_page "$src/man/ramguard.1" "$flag" ||
      fail "ramguard help $command prints $flag; ramguard(1) does not"
  done
done
echo "ramguard(1): $(wc -w <<<"$commands") commands and $checked flags checked"

checked=0
# Keys of block mappings, commented-out optional ones included ("  # slack_model_copies: 0.4").
for key in $(sed -nE 's/^ *(# )?([a-z_]+):( |$).*/\2/p' "$src/deploy/ramguard.example.yaml" | sort -u); do
  checked=$((checked + 1))
  # "key:" where the page describes a value; a section's or a plan's name stands alone.
  in_page "$src/man/ramguard.yaml.5" "$key" || fail "ramguard.example.yaml has $key; ramguard.yaml(5) does not"
done
echo "ramguard.yaml(5): $checked keys checked"

[ "$failures" -eq 0 ] || exit 1
echo "man pages: ok"
