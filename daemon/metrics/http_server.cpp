#include "metrics/http_server.hpp"

#include <CivetServer.h>

#include <exception>
#include <string_view>
#include <vector>

#include "metrics/exposition.hpp"

namespace ramguard {

class MetricsHttpServer::Handler : public CivetHandler {
 public:
  explicit Handler(Render render) : render_(std::move(render)) {}

  bool handleGet(CivetServer*, mg_connection* connection) override {
    const mg_request_info* request = mg_get_request_info(connection);
    const std::string_view version =
        request != nullptr && request->http_version != nullptr ? request->http_version : "1.0";
    if (version == "1.0") {
      // No chunks in HTTP/1.0: the whole body, then its length.
      std::string body;
      render_(body, [](std::string&) {});
      mg_send_http_ok(connection, exposition::kContentType, static_cast<long long>(body.size()));
      mg_write(connection, body.data(), body.size());
      return true;
    }
    mg_send_http_ok(connection, exposition::kContentType, -1);  // -1: chunked
    std::string chunk;
    const Flush flush = [connection](std::string& buffer) {
      if (!buffer.empty()) mg_send_chunk(connection, buffer.data(), buffer.size());
      buffer.clear();
    };
    render_(chunk, flush);
    flush(chunk);
    mg_send_chunk(connection, "", 0);  // the last, empty chunk ends the body
    return true;
  }

 private:
  Render render_;
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
