#include "fleet/http_get.hpp"

#include <array>
#include <cctype>
#include <memory>

#include "config/values.hpp"

namespace ramguard {
namespace {

using asio::ip::tcp;

// One exchange: resolver, socket and deadline share its lifetime; the first of the reply's end
// and the deadline finishes it.
struct Exchange : std::enable_shared_from_this<Exchange> {
  Exchange(asio::io_context& io, HttpGet g, std::function<void(Result<HttpReply>)> d)
      : resolver(io), socket(io), deadline(io), get(std::move(g)), done(std::move(d)) {}

  void start() {
    auto self = shared_from_this();
    deadline.expires_after(get.timeout);
    deadline.async_wait([self](const asio::error_code& ec) {
      if (!ec) self->finish(Error{"timed out after " + format_duration(self->get.timeout)});
    });
    resolver.async_resolve(get.url.host, std::to_string(get.url.port),
                           [self](const asio::error_code& ec, tcp::resolver::results_type found) {
                             if (ec) return self->finish(Error{"resolving: " + ec.message()});
                             self->connect(found);
                           });
  }

  void connect(const tcp::resolver::results_type& found) {
    auto self = shared_from_this();
    asio::async_connect(socket, found, [self](const asio::error_code& ec, const tcp::endpoint&) {
      if (ec) return self->finish(Error{"connecting: " + ec.message()});
      self->send();
    });
  }

  void send() {
    const bool v6 = get.url.host.find(':') != std::string::npos;
    const std::string host =
        (v6 ? "[" + get.url.host + "]" : get.url.host) + ":" + std::to_string(get.url.port);
    request = "GET " + get.url.path_prefix + get.target + " HTTP/1.0\r\nHost: " + host +
              "\r\nAccept: application/json\r\nConnection: close\r\n";
    if (!get.bearer_token.empty()) request += "Authorization: Bearer " + get.bearer_token + "\r\n";
    request += "\r\n";
    auto self = shared_from_this();
    asio::async_write(socket, asio::buffer(request),
                      [self](const asio::error_code& ec, std::size_t) {
                        if (ec) return self->finish(Error{"sending: " + ec.message()});
                        self->receive();
                      });
  }

  void receive() {
    auto self = shared_from_this();
    socket.async_read_some(asio::buffer(chunk), [self](const asio::error_code& ec, std::size_t n) {
      self->raw.append(self->chunk.data(), n);
      if (self->raw.size() > self->get.max_reply_bytes) {
        return self->finish(
            Error{"reply larger than " + std::to_string(self->get.max_reply_bytes) + " bytes"});
      }
      if (ec == asio::error::eof) return self->finish(parse_http_reply(self->raw));
      if (ec) return self->finish(Error{"reading: " + ec.message()});
      self->receive();
    });
  }

  void finish(Result<HttpReply> result) {
    if (finished) return;
    finished = true;
    deadline.cancel();
    resolver.cancel();
    asio::error_code ignored;
    socket.close(ignored);
    if (!result) {
      result =
          Error{get.url.host + ":" + std::to_string(get.url.port) + ": " + result.error().message};
    }
    done(std::move(result));
  }

  tcp::resolver resolver;
  tcp::socket socket;
  asio::steady_timer deadline;
  HttpGet get;
  std::function<void(Result<HttpReply>)> done;
  std::string request;
  std::string raw;
  std::array<char, 8192> chunk{};
  bool finished = false;
};

}  // namespace

void async_http_get(asio::io_context& io, HttpGet get,
                    std::function<void(Result<HttpReply>)> done) {
  std::make_shared<Exchange>(io, std::move(get), std::move(done))->start();
}

Result<HttpReply> parse_http_reply(const std::string& raw) {
  if (!raw.starts_with("HTTP/1.") || raw.size() < 12) return Error{"not an HTTP reply"};
  const auto header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos) return Error{"HTTP reply without the end of its headers"};
  HttpReply reply;
  const std::string code = raw.substr(9, 3);
  if (code.find_first_not_of("0123456789") != std::string::npos) {
    return Error{"HTTP reply with a bad status line"};
  }
  reply.status = std::stoi(code);
  std::string headers = raw.substr(0, header_end);
  for (char& c : headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (headers.find("transfer-encoding: chunked") != std::string::npos) {
    return Error{"HTTP reply with a chunked body to an HTTP/1.0 request"};
  }
  reply.body = raw.substr(header_end + 4);
  return reply;
}

}  // namespace ramguard
