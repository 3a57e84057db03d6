#pragma once
// A raw control-protocol connection for the control_* integration tests: one socket kept open
// across requests (so a test can show the SAME connection carries on after a bad request),
// JSON lines in and out, no client library in between.

#include <arpa/inet.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ramguard.pb.h"

namespace ramguard::testing {

inline v1::Reply parse_reply(const std::string& line) {
  v1::Reply reply;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(line, &reply, options).ok()) {
    throw std::runtime_error("unparseable reply: '" + line + "'");
  }
  return reply;
}

// One reply per line of TEXT (what a test's child process collected), in order.
inline std::vector<v1::Reply> replies_of(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::vector<v1::Reply> out;
  while (std::getline(lines, line)) out.push_back(parse_reply(line));
  return out;
}

inline std::string to_json(v1::Request request) {
  if (request.version() == 0) request.set_version(1);
  std::string line;
  (void)google::protobuf::util::MessageToJsonString(request, &line);
  return line;
}

class Wire {
 public:
  // Unix socket.
  explicit Wire(const std::filesystem::path& socket_path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
    connect_or_throw(reinterpret_cast<sockaddr*>(&addr), sizeof addr, socket_path.string());
  }
  // Loopback TCP.
  explicit Wire(std::uint16_t tcp_port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(tcp_port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect_or_throw(reinterpret_cast<sockaddr*>(&addr), sizeof addr,
                     "127.0.0.1:" + std::to_string(tcp_port));
  }
  ~Wire() {
    if (fd_ >= 0) ::close(fd_);
  }
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;

  // Sends raw bytes (a line, several lines, or part of one).
  void send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed: " + std::string(std::strerror(errno)));
      sent += static_cast<std::size_t>(n);
    }
  }
  // The next reply line without its newline; empty when the peer closed or timed out.
  std::string read_line() {
    for (;;) {
      const auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return {};
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  // The next length-delimited frame's payload (the binary framing); nothing when the peer
  // closed or timed out. It shares read_line's buffer: bytes read past a line (the frame the
  // daemon wrote right after its hello reply) are not lost.
  std::optional<std::string> read_frame_payload() {
    for (;;) {
      google::protobuf::io::CodedInputStream in(
          reinterpret_cast<const std::uint8_t*>(buffer_.data()), static_cast<int>(buffer_.size()));
      std::uint32_t length = 0;
      if (in.ReadVarint32(&length)) {
        const auto header = static_cast<std::size_t>(in.CurrentPosition());
        if (buffer_.size() - header >= length) {
          std::string payload = buffer_.substr(header, length);
          buffer_.erase(0, header + length);
          return payload;
        }
      }
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  std::string roundtrip(const std::string& line) {
    send(line + "\n");
    return read_line();
  }
  v1::Reply call(const std::string& line) { return parse_reply(roundtrip(line)); }
  v1::Reply call(const v1::Request& request) { return call(to_json(request)); }
  int fd() const { return fd_; }

 private:
  void connect_or_throw(const sockaddr* addr, socklen_t len, const std::string& where) {
    if (::connect(fd_, addr, len) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      throw std::runtime_error("cannot connect to " + where + ": " + why);
    }
    timeval tv{20, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  int fd_ = -1;
  std::string buffer_;
};

inline const char* const kHelloLine = R"({"version":1,"requestId":"still-there","hello":{}})";

}  // namespace ramguard::testing
