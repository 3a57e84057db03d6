# ramguard: build ramguardd and the ramguard CLI from Debian 12 packages, ship only them and the
# shared libraries they load.
#   docker build -t ramguard:0.1.0 .        (podman: add --format docker to keep HEALTHCHECK)
#
# Host-wide, like the DaemonSet: root with three capabilities, the host's PIDs, socket and ledger
# on the host (deploy/systemd/ramguardd.service explains why those capabilities and no others):
#   docker run -d --user 0 --pid=host --cap-drop=ALL --cap-add=DAC_OVERRIDE \
#     --cap-add=DAC_READ_SEARCH --cap-add=SYS_PTRACE -v /run/ramguard:/run/ramguard \
#     -v /var/lib/ramguard:/var/lib/ramguard -p 127.0.0.1:9797:9797 ramguard:0.1.0
# Beside one coordinator, like the sidecar: as the coordinator's user, no capability, sharing its
# PID namespace (the image's default user is the unprivileged 65532, "ramguard").
#   docker run -d --user 1000 --pid=container:COORDINATOR -v SOCKET_DIR:/run/ramguard ramguard:0.1.0

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake ninja-build pkg-config \
      libasio-dev prometheus-cpp-dev libcivetweb-dev libyaml-cpp-dev libjemalloc-dev \
      libprotobuf-dev protobuf-compiler libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the two programs are built from (.dockerignore keeps the context to the same).
COPY CMakeLists.txt ./
COPY cmake cmake
COPY proto proto
COPY base base
COPY daemon daemon
COPY client client
# Tests and benchmarks run in CI (./dev.sh test), not here. Only the two shipped programs are
# built, at -O2 without debug information (the symbols would be stripped anyway).
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
      -DRAMGUARD_BUILD_TESTS=OFF -DRAMGUARD_BUILD_BENCH=OFF \
 && cmake --build /build --target ramguardd ramguard \
 && install -D --strip /build/daemon/ramguardd /out/usr/sbin/ramguardd \
 && install -D --strip /build/client/cli/ramguard /out/usr/bin/ramguard

FROM debian:bookworm-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="ramguard" \
      org.opencontainers.image.description="RAM guard for the coordinator of distributed and federated training: ramguardd and the ramguard CLI" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="debian:bookworm-slim"
# The shared libraries the two programs load (Debian 12 names: civetweb serves /metrics,
# prometheus-cpp's core keeps the daemon-wide metrics). The apt cache and lists go in the same
# layer.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcivetweb1 libprometheus-cpp-core1.0 libyaml-cpp0.7 \
      libjemalloc2 libprotobuf32 libsqlite3-0 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && echo 'ramguard:x:65532:' >> /etc/group \
 && echo 'ramguard:x:65532:65532:ramguard:/var/lib/ramguard:/usr/sbin/nologin' >> /etc/passwd \
 && mkdir -p /etc/ramguard /run/ramguard /var/lib/ramguard \
 && chown ramguard:ramguard /run/ramguard /var/lib/ramguard
COPY --from=build /out/ /
COPY deploy/ramguard.example.yaml /etc/ramguard/ramguard.example.yaml
# Control socket and run ledger: mount these from the host (or share them in a pod).
VOLUME ["/run/ramguard", "/var/lib/ramguard"]
EXPOSE 9797
# `ramguard` inside the container (podman exec, probes) finds the daemon without --socket.
ENV RAMGUARD_SOCKET=/run/ramguard/ramguard.sock
# Unprivileged by default; the host-wide deployment runs as root with three capabilities.
USER 65532:65532
# The same probe as deploy/kubernetes: the daemon answers on its control socket.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s \
  CMD ["/usr/bin/ramguard", "--socket", "/run/ramguard/ramguard.sock", "--timeout", "4s", "hello"]
# SIGTERM drains and exits; SIGHUP reloads the configuration.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/sbin/ramguardd"]
# Defaults for a container; Kubernetes `args:` replace them (see deploy/kubernetes/).
CMD ["--socket", "/run/ramguard/ramguard.sock", "--state-dir", "/var/lib/ramguard", \
     "--metrics", "0.0.0.0:9797"]
