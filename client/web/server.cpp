#include "web/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "ramguard/base/json_escape.hpp"
#include "web/page.hpp"

namespace ramguard::web {
namespace {

constexpr std::size_t kMaxRequestBytes = 16 * 1024;
constexpr auto kRequestTimeout = std::chrono::seconds(5);

bool same_token(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;  // constant time: the comparison does not stop at the first mismatch
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Response not_found() {
  return {404, "text/plain; charset=utf-8", "not found\n"};
}

Response json_error(int status, std::string_view message) {
  return {status, "application/json", "{\"error\":\"" + escape_json(message) + "\"}\n"};
}

std::vector<std::string> split_ids(std::string_view query) {
  std::vector<std::string> ids;
  constexpr std::string_view kKey = "ids=";
  std::size_t at = 0;
  while (at <= query.size()) {
    const std::size_t amp = std::min(query.find('&', at), query.size());
    const std::string_view pair = query.substr(at, amp - at);
    if (pair.substr(0, kKey.size()) == kKey) {
      std::string_view list = pair.substr(kKey.size());
      while (!list.empty()) {
        const std::size_t comma = std::min(list.find(','), list.size());
        std::string id = url_decode(list.substr(0, comma));
        if (!id.empty()) ids.push_back(std::move(id));
        list.remove_prefix(std::min(list.size(), comma + 1));
      }
    }
    at = amp + 1;
  }
  return ids;
}

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return "Bad Gateway";
  }
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::string url_decode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

Response route(Source& source, std::string_view token, std::string_view method,
               std::string_view target) {
  if (target.size() < token.size() + 2 || target[0] != '/' ||
      !same_token(target.substr(1, token.size()), token) || target[token.size() + 1] != '/') {
    return not_found();
  }
  if (method != "GET") return {405, "text/plain; charset=utf-8", "GET only\n"};
  std::string_view rest = target.substr(token.size() + 2);
  std::string_view query;
  if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const std::string base = "/" + std::string(token) + "/";
  try {
    if (rest.empty() || rest == "compare" || rest.starts_with("run/")) {
      return {200, "text/html; charset=utf-8", shell_html(base)};
    }
    if (rest == "app.js") return {200, "text/javascript; charset=utf-8", std::string(app_js())};
    if (rest == "app.css") return {200, "text/css; charset=utf-8", std::string(app_css())};
    if (rest == "api/runs") return {200, "application/json", source.runs_json()};
    if (rest.starts_with("api/run/")) {
      const std::string id = url_decode(rest.substr(8));
      if (id.empty()) return json_error(400, "no run id");
      return {200, "application/json", source.run_json(id)};
    }
    if (rest == "api/compare") {
      const std::vector<std::string> ids = split_ids(query);
      if (ids.empty()) return json_error(400, "compare needs ids=RUN,RUN");
      return {200, "application/json", source.compare_json(ids)};
    }
  } catch (const SourceError& e) {
    return json_error(e.http_status(), e.what());
  } catch (const std::exception& e) {
    return json_error(502, e.what());
  }
  return not_found();
}

std::string random_token() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("getrandom failed: " + std::string(std::strerror(errno)));
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (const unsigned char b : bytes) token += {kHex[b >> 4], kHex[b & 15]};
  return token;
}

HttpServer::HttpServer(const std::string& host, std::uint16_t port) {
  const std::string where = host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    throw std::runtime_error("cannot listen on " + where + ": not an IPv4 address");
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    const std::string error = std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error("cannot listen on " + where + ": " + error);
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
}

HttpServer::~HttpServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void HttpServer::serve(Source& source, std::string_view token, const std::atomic<bool>& stop) {
  while (!stop.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    answer(fd, source, token);
    ::close(fd);
  }
}

void HttpServer::answer(int fd, Source& source, std::string_view token) {
  // Reads the request head within the timeout; a slow or silent client is dropped.
  std::string head;
  const auto deadline = std::chrono::steady_clock::now() + kRequestTimeout;
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequestBytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, static_cast<std::size_t>(n));
  }
  Response response;
  const std::size_t line_end = head.find("\r\n");
  const std::string_view line = std::string_view(head).substr(0, line_end);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (line_end == std::string::npos || sp2 == std::string_view::npos) {
    response = {400, "text/plain; charset=utf-8", "bad request\n"};
  } else {
    response = route(source, token, line.substr(0, sp1), line.substr(sp1 + 1, sp2 - sp1 - 1));
  }
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + reason(response.status) +
                    "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) +
                    "\r\nContent-Security-Policy: " + std::string(served_csp()) +
                    "\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer"
                    "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
  out += response.body;
  write_all(fd, out);
}

}  // namespace ramguard::web
