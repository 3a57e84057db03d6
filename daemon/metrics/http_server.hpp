#pragma once
// The /metrics endpoint: civetweb (the HTTP server prometheus-cpp itself embeds) on its own two
// threads, answering GET /metrics with whatever the render callback writes. HTTP/1.1 clients
// (Prometheus) get it in chunks as it is written, so no copy of the whole exposition is kept;
// HTTP/1.0 clients get one body with its length. Any other path is civetweb's 404.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ramguard/base/result.hpp"

class CivetServer;

namespace ramguard {

class MetricsHttpServer {
 public:
  // Sends what the buffer holds so far and empties it.
  using Flush = std::function<void(std::string&)>;
  // Appends the exposition to the buffer, calling flush whenever it may send what it wrote;
  // called on a server thread per scrape.
  using Render = std::function<void(std::string& buffer, const Flush& flush)>;

  // Listens on civetweb's spec ("127.0.0.1:9464", "[::1]:0"). The Error carries civetweb's
  // message; callers probe the address themselves for a better one.
  static Result<std::unique_ptr<MetricsHttpServer>> start(const std::string& civetweb_spec,
                                                          Render render);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  std::uint16_t port() const;

 private:
  class Handler;
  MetricsHttpServer() = default;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<CivetServer> server_;
  std::string wake_host_;  // where a connection reaches the listener (see the destructor)
};

}  // namespace ramguard
