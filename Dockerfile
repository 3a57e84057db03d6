# ramguard: build ramguardd (and the ramguard CLI) from Debian 12 packages, ship a slim image.
#   docker build -t ramguard:0.1.0 .
#   docker run --pid=host --cap-drop=ALL --cap-add=DAC_OVERRIDE --cap-add=DAC_READ_SEARCH \
#     --cap-add=SYS_PTRACE -v /run/ramguard:/run/ramguard -v /var/lib/ramguard:/var/lib/ramguard \
#     -p 127.0.0.1:9797:9797 ramguard:0.1.0
# (deploy/systemd/ramguardd.service explains why those capabilities and no others.)

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libasio-dev prometheus-cpp-dev libyaml-cpp-dev libjemalloc-dev \
      libprotobuf-dev protobuf-compiler libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Tests and benchmarks run in CI (./dev.sh test), not in the image build.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
      -DRAMGUARD_BUILD_TESTS=OFF -DRAMGUARD_BUILD_BENCH=OFF \
 && cmake --build /build \
 && DESTDIR=/install cmake --install /build \
 && strip --strip-unneeded /install/usr/sbin/ramguardd

FROM debian:bookworm-slim
# Only the shared libraries ramguardd links against (Debian 12 names).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libprometheus-cpp-pull1.0 libprometheus-cpp-core1.0 libcivetweb1 libyaml-cpp0.7 \
      libjemalloc2 libprotobuf32 libsqlite3-0 zlib1g \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /etc/ramguard /run/ramguard /var/lib/ramguard
COPY --from=build /install/usr/ /usr/
COPY deploy/ramguard.example.yaml /etc/ramguard/ramguard.example.yaml
# Control socket and run ledger: mount these from the host (or share them in a pod).
VOLUME ["/run/ramguard", "/var/lib/ramguard"]
EXPOSE 9797
# SIGTERM drains and exits; SIGHUP reloads the configuration.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/sbin/ramguardd"]
# Defaults for a container; Kubernetes `args:` replace them (see deploy/kubernetes/).
CMD ["--socket", "/run/ramguard/ramguard.sock", "--state-dir", "/var/lib/ramguard", \
     "--metrics", "0.0.0.0:9797"]
