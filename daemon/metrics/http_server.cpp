#include "metrics/http_server.hpp"

#include <CivetServer.h>

#include <exception>
#include <mutex>
#include <vector>

#include "metrics/exposition.hpp"

namespace ramguard {

class MetricsHttpServer::Handler : public CivetHandler {
 public:
  explicit Handler(Render render) : render_(std::move(render)) {}

  bool handleGet(CivetServer*, mg_connection* connection) override {
    // One buffer, reused by every scrape: scrapes take turns rather than each thread keeping
    // a copy of the whole exposition (a megabyte at a thousand targets).
    std::lock_guard lock(mutex_);
    body_.clear();
    render_(body_);
    mg_send_http_ok(connection, exposition::kContentType, static_cast<long long>(body_.size()));
    mg_write(connection, body_.data(), body_.size());
    return true;
  }

 private:
  Render render_;
  std::mutex mutex_;
  std::string body_;
};

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::start(
    const std::string& civetweb_spec, Render render) {
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->handler_ = std::make_unique<Handler>(std::move(render));
  // Two threads, as prometheus-cpp's Exposer uses; a client that stops reading is cut off
  // after 10 s instead of holding a thread.
  const std::vector<std::string> options = {"listening_ports",    civetweb_spec, "num_threads", "2",
                                            "request_timeout_ms", "10000"};
  try {
    server->server_ = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
  server->server_->addHandler("/metrics", server->handler_.get());
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  // Stop the threads before the handler they call goes away.
  if (server_) server_->close();
}

std::uint16_t MetricsHttpServer::port() const {
  const std::vector<int> ports = server_->getListeningPorts();
  return ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
}

}  // namespace ramguard
