#pragma once
// One HTTP GET on the daemon's io_context, bounded by a deadline: what the fleet history asks
// a Prometheus-compatible query endpoint. HTTP/1.0 with Connection: close, so the answer is
// one body ending at the end of the stream (no chunked encoding to decode), and plain TCP
// (config/http_url.hpp says why not TLS).

#include <asio.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "config/http_url.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

struct HttpReply {
  int status = 0;
  std::string body;
};

struct HttpGet {
  HttpUrl url;
  std::string target;        // path and query, appended to url.path_prefix
  std::string bearer_token;  // "" none
  std::chrono::nanoseconds timeout{std::chrono::milliseconds(500)};  // resolve to last byte
  std::size_t max_reply_bytes = 1 << 20;
};

// Calls `done` exactly once, from a handler on `io`: the reply (any status), or an error naming
// the host and what failed ("timed out after 500 ms", "connection refused", a bad reply).
void async_http_get(asio::io_context& io, HttpGet get, std::function<void(Result<HttpReply>)> done);

// Splits a raw HTTP/1.x response into status and body. Errors: no status line, no header end,
// a chunked body.
Result<HttpReply> parse_http_reply(const std::string& raw);

}  // namespace ramguard
