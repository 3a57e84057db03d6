#!/usr/bin/env bash
# Builds the Dockerfile with podman on a debian:bookworm-slim look-alike made from the Debian
# archive, then smoke-tests the image: size and contents, labels, --version, --check-config, the
# daemon serving /metrics, `ramguard hello` and the HEALTHCHECK inside the container, a real run
# and an exited target through the socket from the host, podman stop. Everything podman stores
# (base, build layers, image, containers) lives under WORK_DIR and is removed at the end.
#
#   build_and_smoke.sh SOURCE_DIR WORK_DIR HOST_RAMGUARD_CLI MEMCHILD VERSION
#
# Exit 77 (a ctest skip) only where this machine cannot create the namespaces a container needs;
# a missing tool or any other failure is a failure.
set -euo pipefail
export LC_ALL=C # $EPOCHREALTIME with a decimal point

if [ $# -ne 5 ]; then
  echo "usage: $0 SOURCE_DIR WORK_DIR HOST_RAMGUARD_CLI MEMCHILD VERSION" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
WORK=$2
HOST_CLI=$3
MEMCHILD=$4
VERSION=$5
MAX_IMAGE_BYTES=90000000 # 90 MB, as podman and docker count

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/container/podman_env.sh
. "$here/podman_env.sh"

for tool in podman mmdebstrap runc conmon python3 curl readelf; do
  command -v "$tool" >/dev/null || fail "$tool not found (dev.sh installs it)"
done
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: podman here runs as root only (the test writes a private rootful configuration)"
  exit 77
fi
if ! unshare --mount --uts --ipc --net --pid --fork true 2>/dev/null; then
  echo "SKIP: this machine cannot create the namespaces a container needs (unshare failed)"
  exit 77
fi

podman_env_setup "$WORK"
trap 'podman_env_teardown' EXIT

start_seconds=$EPOCHREALTIME
elapsed() { # seconds since $1 (an $EPOCHREALTIME), to a tenth
  local us=$((${EPOCHREALTIME/./} - ${1/./}))
  printf '%d.%d' $((us / 1000000)) $((us % 1000000 / 100000))
}

# --- the base: debian:bookworm-slim as the official image is made, from the Debian archive ---
t=$EPOCHREALTIME
make_bookworm_slim_base
echo "base: $(pod image inspect --format '{{.Size}}' "$BASE_IMAGE") bytes in $(elapsed "$t") s"

# --- the image, from the Dockerfile as a user builds it ---
IMAGE=localhost/ramguard:smoke-$$
revision=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)
source_url=$(git -C "$SRC" remote get-url origin 2>/dev/null || echo unknown)
t=$EPOCHREALTIME
nice -n 10 "${POD[@]}" build --format docker --network host --pull=never --layers=false \
  --build-arg "VERSION=$VERSION" --build-arg "REVISION=$revision" --build-arg "SOURCE=$source_url" \
  -t "$IMAGE" "$SRC" >"$WORK/build.log" 2>&1 || {
  tail -n 60 "$WORK/build.log"
  fail "podman build failed (log above)"
}
echo "build: $(elapsed "$t") s"

# --- size and contents ---
size=$(pod image inspect --format '{{.Size}}' "$IMAGE")
echo "image size: $size bytes (limit $MAX_IMAGE_BYTES)"
[ "$size" -lt "$MAX_IMAGE_BYTES" ] || fail "image is $size bytes, over $MAX_IMAGE_BYTES"
dev_files=$(pod run --rm --no-healthcheck --network none --user 0 --entrypoint /bin/sh "$IMAGE" -c \
  'find / -xdev \( -name "*.h" -o -name "*.hpp" -o -name "*.a" -o -name "*.pc" -o -name "*.proto" \
     -o -name "*Config.cmake" -o -name "*-config.cmake" -o -path "/usr/include/*" \) -print')
[ -z "$dev_files" ] || fail "development files in the image:"$'\n'"$dev_files"
ctr=$(pod create --no-healthcheck --network none "$IMAGE")
pod cp "$ctr:/usr/bin/ramguard" "$WORK/ramguard.image"
pod cp "$ctr:/usr/sbin/ramguardd" "$WORK/ramguardd.image"
pod rm "$ctr" >/dev/null
for binary in "$WORK/ramguard.image" "$WORK/ramguardd.image"; do
  if readelf -S "$binary" | grep -Eq '\.symtab|\.debug_'; then
    fail "$(basename "$binary" .image) in the image is not stripped"
  fi
  echo "$(basename "$binary" .image): $(stat -c %s "$binary") bytes, stripped"
done
rm -f "$WORK/ramguard.image" "$WORK/ramguardd.image"
missing=$(pod run --rm --no-healthcheck --network none --entrypoint /bin/sh "$IMAGE" -c \
  'ldd /usr/sbin/ramguardd /usr/bin/ramguard' | grep 'not found' || true)
[ -z "$missing" ] || fail "libraries missing in the image:"$'\n'"$missing"

# --- metadata ---
label() { pod image inspect --format "{{index .Labels \"org.opencontainers.image.$1\"}}" "$IMAGE"; }
[ "$(label version)" = "$VERSION" ] || fail "label version is '$(label version)', want $VERSION"
[ "$(label revision)" = "$revision" ] || fail "label revision is '$(label revision)'"
[ "$(label source)" = "$source_url" ] || fail "label source is '$(label source)', want $source_url"
[ "$(pod image inspect --format '{{.Config.User}}' "$IMAGE")" = "65532:65532" ] ||
  fail "the image's default user is not the unprivileged 65532"
health=$(pod image inspect --format '{{json .HealthCheck.Test}}' "$IMAGE")
case "$health" in
  *'"/usr/bin/ramguard"'*'"hello"'*) echo "healthcheck: $health" ;;
  *) fail "HEALTHCHECK is not ramguard hello: $health" ;;
esac

# --- the programs ---
expect_output() { # WANT COMMAND...: COMMAND exits 0 and prints exactly WANT
  local want=$1 got
  shift
  got=$("$@") || fail "$* exited $?"
  [ "$got" = "$want" ] || fail "$* printed '$got', want '$want'"
}
expect_output "ramguardd $VERSION" pod run --rm --no-healthcheck --network none "$IMAGE" --version
expect_output "ramguard $VERSION" pod run --rm --no-healthcheck --network none --entrypoint ramguard "$IMAGE" --version
pod run --rm --no-healthcheck --network none "$IMAGE" --check-config /etc/ramguard/ramguard.example.yaml ||
  fail "--check-config rejects the shipped example configuration"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # SECONDS COMMAND...: polls COMMAND every 50 ms
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# --- host-wide, as the DaemonSet runs it: root with three capabilities, host PIDs ---
socket_dir=$WORK/socket
state_dir=$WORK/state
mkdir -p "$socket_dir" "$state_dir"
port=$(free_port)
t=$EPOCHREALTIME
# No systemd here to time the HEALTHCHECK (podman logs that it cannot reach systemd): the test
# runs it itself (podman healthcheck run).
host_wide=$(pod run -d --name "ramguard-host-$$" --health-interval disable --network host \
  --pid host --user 0 \
  --cap-drop ALL --cap-add DAC_OVERRIDE,DAC_READ_SEARCH,SYS_PTRACE \
  -v "$socket_dir:/run/ramguard" -v "$state_dir:/var/lib/ramguard" "$IMAGE" \
  --socket /run/ramguard/ramguard.sock --state-dir /var/lib/ramguard \
  --metrics "127.0.0.1:$port")
wait_for 10 curl -fsS "http://127.0.0.1:$port/metrics" || {
  pod logs "$host_wide" | tail -n 20
  fail "no /metrics on 127.0.0.1:$port within 10 s"
}
echo "host-wide daemon: /metrics after $(elapsed "$t") s"
curl -fsS "http://127.0.0.1:$port/metrics" | grep -q '^ramguard_' || fail "/metrics has no ramguard_ series"
hello=$(pod exec "$host_wide" ramguard hello) || fail "ramguard hello through podman exec failed"
case "$hello" in *"$VERSION"*) ;; *) fail "hello does not name version $VERSION: $hello" ;; esac
pod healthcheck run "$host_wide" || fail "the HEALTHCHECK fails against a running daemon"

# A real run from the host through the mounted socket: the guard in the container measures a host
# process that holds 64 MiB. Its high-water mark is read every tick (2 s): the process lives 3 s
# after its allocation, so that at least one tick sees it.
cli() { "$HOST_CLI" --socket "$socket_dir/ramguard.sock" "$@"; }
run_field() { # RUN FIELD: a field of the run's status
  cli --json status "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0].get(sys.argv[1], ""))' "$2"
}
commands=$WORK/memchild.commands
printf 'alloc a %d\nsleep 3000\nfree a\nexit 0\n' $((64 * 1024 * 1024)) >"$commands"
out=$(cli exec --job container-smoke -- sh -c 'exec "$0" < "$1"' "$MEMCHILD" "$commands" 2>&1) ||
  fail "ramguard exec from the host failed: $out"
run=$(sed -n 's/^ramguard: run \([^ ]*\).*/\1/p' <<<"$out" | head -n 1)
[ -n "$run" ] || fail "no run id in: $out"
peak=$(run_field "$run" peakBytes)
[ "${peak:-0}" -ge $((64 * 1024 * 1024)) ] || fail "run $run peak is '$peak' bytes, want >= 64 MiB"
echo "host run $run: peak $peak bytes, state $(run_field "$run" state)"

# An exited target: the command is killed; the daemon records the run as exited, with a verdict.
status=0
out=$(cli exec --job container-smoke -- sh -c 'kill -9 $$' 2>&1) || status=$?
[ "$status" -eq 137 ] || fail "exec of a killed command exited $status, want 137: $out"
killed=$(sed -n 's/^ramguard: run \([^ ]*\).*/\1/p' <<<"$out" | head -n 1)
[ -n "$killed" ] || fail "no run id in: $out"
[ "$(run_field "$killed" state)" = exited ] || fail "run $killed is not 'exited'"
cli --json status "$killed" | grep -q '"kind": *"exited"' || fail "run $killed has no exited verdict"
echo "exited target: run $killed exited, with its verdict"

t=$EPOCHREALTIME
pod stop -t 20 "$host_wide" >/dev/null || fail "podman stop failed"
echo "podman stop: $(elapsed "$t") s"
[ "$(pod inspect --format '{{.State.ExitCode}}' "$host_wide")" = 0 ] ||
  fail "the daemon exited $(pod inspect --format '{{.State.ExitCode}}' "$host_wide") on SIGTERM"
[ -s "$state_dir/ramguard.db" ] || fail "no ledger in the mounted state directory"
pod rm -v "$host_wide" >/dev/null

# --- as the sidecar runs it: the image's unprivileged user, no capability ---
port=$(free_port)
sidecar=$(pod run -d --name "ramguard-sidecar-$$" --health-interval disable --network host \
  --cap-drop ALL "$IMAGE" \
  --socket /run/ramguard/ramguard.sock --state-dir /var/lib/ramguard \
  --metrics "127.0.0.1:$port")
wait_for 10 curl -fsS "http://127.0.0.1:$port/metrics" || {
  pod logs "$sidecar" | tail -n 20
  fail "the unprivileged daemon serves no /metrics within 10 s"
}
[ "$(pod exec "$sidecar" id -u)" = 65532 ] || fail "the sidecar does not run as 65532"
pod exec "$sidecar" ramguard hello >/dev/null || fail "ramguard hello in the unprivileged container"
pod healthcheck run "$sidecar" || fail "the HEALTHCHECK fails in the unprivileged container"
pod stop -t 20 "$sidecar" >/dev/null
[ "$(pod inspect --format '{{.State.ExitCode}}' "$sidecar")" = 0 ] || fail "the sidecar exited non-zero"
pod rm -v "$sidecar" >/dev/null

echo "container smoke test passed in $(elapsed "$start_seconds") s"
