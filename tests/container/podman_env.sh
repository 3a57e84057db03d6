# A private podman for tests/container (sourced): its own configuration, storage, run directory and
# locks, so that it changes no system file and shares nothing with another podman on the machine,
# and a debian:bookworm-slim look-alike made from the Debian archive (no registry is reachable).
#
#   podman_env_setup WORK_DIR   removes what a killed earlier run left there, writes the config
#   pod ARGS...                 podman with that configuration
#   make_bookworm_slim_base     imports the base as docker.io/library/debian:bookworm-slim
#   podman_env_teardown         removes every container, image and layer, and the work files

BASE_IMAGE=docker.io/library/debian:bookworm-slim

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

pod() { "${POD[@]}" "$@"; }

# RUN_DIR holds podman's runtime state (on tmpfs, short paths for its sockets); a run that was
# killed before its teardown leaves its path in WORK_DIR/run-dir for the next run to remove.
podman_env_setup() {
  PODMAN_WORK=$1
  mkdir -p "$PODMAN_WORK"
  PODMAN_WORK=$(cd "$PODMAN_WORK" && pwd)
  if [ -e "$PODMAN_WORK/storage" ] || [ -e "$PODMAN_WORK/run-dir" ]; then
    echo "removing what an interrupted earlier run left in $PODMAN_WORK"
    RUN_DIR=$(cat "$PODMAN_WORK/run-dir" 2>/dev/null || true)
    [ -n "$RUN_DIR" ] && [ -d "$RUN_DIR" ] || RUN_DIR=$(mktemp -d /run/ramguard-podman.XXXXXX)
    podman_env_configure
    podman_env_teardown
    mkdir -p "$PODMAN_WORK"
  fi
  RUN_DIR=$(mktemp -d /run/ramguard-podman.XXXXXX)
  echo "$RUN_DIR" >"$PODMAN_WORK/run-dir"
  podman_env_configure
}

podman_env_configure() {
  mkdir -p "$PODMAN_WORK/conf" "$PODMAN_WORK/tmp" "$PODMAN_WORK/networks"
  # Containers may not raise limits above the hard ones podman runs with (root here may lack
  # CAP_SYS_RESOURCE), and podman's defaults for root are higher. podman runs with nproc capped
  # at kernel.pid_max (seen here: 32768 against the shell's 96364).
  local nofile nproc pid_max
  nofile=$(ulimit -Hn)
  nproc=$(ulimit -Hu)
  pid_max=$(cat /proc/sys/kernel/pid_max)
  [ "$nofile" = unlimited ] && nofile=1048576
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc=$pid_max; fi
  # runc: crun refuses this kernel's cgroup v1/v2 hybrid. cgroupfs and a file event log: no
  # systemd or journald is needed. File locks under RUN_DIR: the system podman's shared-memory
  # locks stay untouched.
  cat >"$PODMAN_WORK/conf/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$RUN_DIR/events.log"
lock_type = "file"
tmp_dir = "$RUN_DIR/libpod"
image_copy_tmp_dir = "$PODMAN_WORK/tmp"
volume_path = "$PODMAN_WORK/storage/volumes"
static_dir = "$PODMAN_WORK/storage/libpod"

[network]
network_config_dir = "$PODMAN_WORK/networks"
EOF
  # No registry: names resolve only to local images.
  cat >"$PODMAN_WORK/conf/registries.conf" <<EOF
unqualified-search-registries = []
short-name-mode = "permissive"
EOF
  export CONTAINERS_CONF=$PODMAN_WORK/conf/containers.conf
  export CONTAINERS_REGISTRIES_CONF=$PODMAN_WORK/conf/registries.conf
  export TMPDIR=$PODMAN_WORK/tmp
  POD=(podman --root "$PODMAN_WORK/storage" --runroot "$RUN_DIR/storage" --storage-driver overlay)
}

podman_env_teardown() {
  set +e
  if [ -d "$PODMAN_WORK/storage" ]; then
    pod rm --all --force --volumes --time 0 >/dev/null 2>&1
    pod rmi --all --force >/dev/null 2>&1
    pod system prune --all --force --volumes >/dev/null 2>&1
  fi
  # Layers still mounted (a container that would not go) keep rm -rf out of the store.
  local mount prefix
  for prefix in "$PODMAN_WORK" "${RUN_DIR:-}"; do
    [ -n "$prefix" ] || continue
    while read -r mount; do
      case "$mount" in "$prefix"/*) umount -l "$mount" 2>/dev/null ;; esac
    done < <(findmnt -rn -o TARGET | sort -r)
  done
  rm -rf "$PODMAN_WORK/storage" "$PODMAN_WORK/tmp" "$PODMAN_WORK/socket" "$PODMAN_WORK/state"
  [ -n "${RUN_DIR:-}" ] && rm -rf "$RUN_DIR"
  rm -f "$PODMAN_WORK/run-dir"
  set -e
}

# debian:bookworm-slim as the official image is made: essential packages and apt, merged /usr,
# the slim image's dpkg excludes and its apt configuration (docker-clean keeps the apt cache out
# of every layer). The host's apt sources and configuration reach the archive the host reaches.
make_bookworm_slim_base() {
  local sources=() f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -s "$f" ] && sources+=("$f")
  done
  [ ${#sources[@]} -gt 0 ] || fail "no apt sources in /etc/apt to make the base from"
  # The official image's apt configuration goes in after the bootstrap, so that its hooks never
  # run on the host during it.
  local docker_apt=$PODMAN_WORK/conf/docker-apt
  mkdir -p "$docker_apt"
  cat >"$docker_apt/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  printf '%s\n' 'Acquire::GzipIndexes "true";' >"$docker_apt/docker-gzip-indexes"
  printf '%s\n' 'Acquire::Languages "none";' >"$docker_apt/docker-no-languages"
  printf '%s\n' 'Apt::AutoRemove::SuggestsImportant "false";' >"$docker_apt/docker-autoremove-suggests"
  local excludes=(/usr/share/doc/'*' /usr/share/groff/'*' /usr/share/info/'*' /usr/share/linda/'*'
    /usr/share/lintian/overrides/'*' /usr/share/locale/'*' /usr/share/man/'*')
  local dpkgopts=() x
  for x in "${excludes[@]}"; do dpkgopts+=(--dpkgopt="path-exclude=$x"); done
  # No fsync per file: a build layer is thrown away on failure anyway (the official image's
  # docker-apt-speedup).
  dpkgopts+=(--dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt=force-unsafe-io)
  # Debian's own python3 and tools: mmdebstrap filters every package through a python3 script,
  # and a python3 shim earlier on PATH (pyenv) costs seconds per package.
  PATH=/usr/sbin:/usr/bin:/sbin:/bin mmdebstrap --quiet --variant=apt --format=tar --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    "${dpkgopts[@]}" \
    --setup-hook='mkdir -p "$1/etc/apt/apt.conf.d" && cp -a /etc/apt/apt.conf.d/. "$1/etc/apt/apt.conf.d/"' \
    --customize-hook="cp $docker_apt/* \"\$1/etc/apt/apt.conf.d/\"" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm - "${sources[@]}" 2>"$PODMAN_WORK/base.log" |
    pod import --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null || {
    tail -n 30 "$PODMAN_WORK/base.log"
    fail "could not make the debian:bookworm-slim base with mmdebstrap (log above)"
  }
}
