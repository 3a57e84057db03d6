#include "metrics/http_server.hpp"

#include <CivetServer.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <string_view>
#include <thread>
#include <vector>

#include "metrics/exposition.hpp"

namespace ramguard {
namespace {

// Where a connection reaches the listener of `spec` ("127.0.0.1:9464", "[::1]:0", "9464",
// "0.0.0.0:9464"): its own address, or loopback for a wildcard.
std::string loopback_for(const std::string& spec) {
  if (spec.starts_with('[')) {
    const std::string host = spec.substr(1, spec.find(']') - 1);
    return host == "::" ? "::1" : host;
  }
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos) return "127.0.0.1";
  const std::string host = spec.substr(0, colon);
  return host.empty() || host == "0.0.0.0" ? "127.0.0.1" : host;
}

// One connection to the listener, closed at once: enough to end civetweb's poll.
void knock(const std::string& host, std::uint16_t port) {
  sockaddr_storage address{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof *v6;
  } else {
    return;
  }
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&address), length);
  ::close(fd);
}

}  // namespace

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
  server->wake_host_ = loopback_for(civetweb_spec);
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (!server_) return;
  // Stop the threads before the handler they call goes away. civetweb's master thread looks at
  // its stop flag between polls of the listener, which wait up to 2 s: every daemon's exit (and
  // every test that starts one) waited for that. Connections during close() end the poll.
  const std::uint16_t listening = port();
  std::atomic<bool> closed{false};
  std::thread knocker([&] {
    while (!closed.load()) {
      knock(wake_host_, listening);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  server_->close();
  closed = true;
  knocker.join();
}

std::uint16_t MetricsHttpServer::port() const {
  const std::vector<int> ports = server_->getListeningPorts();
  return ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
}

}  // namespace ramguard
