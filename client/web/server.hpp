#pragma once
// The page's HTTP side, served by `ramguard ui` as the user who runs it: a small HTTP/1.1
// server (GET only, one request per connection, one connection at a time) and its routes.
// Every path starts with a random token the CLI prints, so other local users cannot use the
// port; the data comes from a Source, which asks the daemon with the CLI user's credentials.

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ramguard::web {

// What the pages show, fetched when asked.
class Source {
 public:
  virtual ~Source() = default;
  virtual std::string runs_json() = 0;
  virtual std::string run_json(const std::string& run_id) = 0;
  virtual std::string compare_json(const std::vector<std::string>& run_ids) = 0;
};

// A Source's refusal with the HTTP status it maps to (404 unknown run, 403 not yours,
// 502 the daemon unreachable) and the daemon's message.
class SourceError : public std::runtime_error {
 public:
  SourceError(int http_status, const std::string& message)
      : std::runtime_error(message), http_status_(http_status) {}
  int http_status() const noexcept { return http_status_; }

 private:
  int http_status_;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// The routes under /<token>/: "" (the list), run/<id>, compare?ids=a,b (HTML shells);
// app.js, app.css; api/runs, api/run/<id>, api/compare?ids=a,b (JSON). Anything else,
// a wrong token included, is a bare 404.
Response route(Source& source, std::string_view token, std::string_view method,
               std::string_view target);

// 32 lowercase hex digits from the kernel's random source.
std::string random_token();

// "%2F" -> "/"; '+' stays '+'. Bad escapes are kept as they are.
std::string url_decode(std::string_view text);

class HttpServer {
 public:
  // Binds host:port (port 0: any); throws std::runtime_error naming the address on failure.
  HttpServer(const std::string& host, std::uint16_t port);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint16_t port() const { return port_; }
  // Answers requests until `stop` is set (checked at least every 200 ms).
  void serve(Source& source, std::string_view token, const std::atomic<bool>& stop);

 private:
  void answer(int fd, Source& source, std::string_view token);
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace ramguard::web
