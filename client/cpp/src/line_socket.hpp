#pragma once
// A blocking Unix-socket connection that exchanges '\n'-terminated lines, or length-delimited
// binary frames, under a deadline.
// Plain POSIX (poll + non-blocking fd): a client library must not bring an event loop into the
// coordinator. Failures throw ClientError naming the socket path.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace ramguard::detail {

class LineSocket {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  LineSocket() = default;
  ~LineSocket() { close(); }
  LineSocket(const LineSocket&) = delete;
  LineSocket& operator=(const LineSocket&) = delete;

  // Connects to the socket at path before the deadline.
  void connect(const std::string& path, Deadline deadline);
  bool connected() const { return fd_ >= 0; }
  // True when the peer has closed an idle connection (checked without blocking), so the next
  // request can go over a fresh one instead of failing.
  bool peer_closed() const;
  void close() noexcept;

  // Writes line plus '\n' completely.
  void write_line(std::string_view line, Deadline deadline);
  // Writes bytes completely (a binary frame).
  void write_bytes(std::string_view bytes, Deadline deadline);
  // Reads up to the next '\n' (not included); a line longer than max_bytes is a protocol error.
  std::string read_line(std::size_t max_bytes, Deadline deadline);
  // Reads one whole binary frame (varint length and body); a body over max_bytes, or a length
  // that is no varint, is a protocol error and closes the connection.
  std::string read_frame(std::size_t max_bytes, Deadline deadline);

 private:
  void wait_for(short events, Deadline deadline, const char* what);
  // Appends what the socket has to buffer_, waiting for it until the deadline.
  void receive(Deadline deadline);

  int fd_ = -1;
  std::string path_;
  std::string buffer_;  // bytes received after the last returned line
};

}  // namespace ramguard::detail
