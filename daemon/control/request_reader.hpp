#pragma once
// Splits the bytes of one control connection into requests, in the connection's framing:
// JSON lines (a line longer than the frame limit is dropped up to its newline and answered with
// an error) or, after a hello chose it, protobuf length-delimited frames. Pure: the session
// feeds it what it reads and serves what comes out, in order.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "control/codec.hpp"

namespace ramguard::control {

// One request as read, with the framing its reply goes back in.
struct Incoming {
  Decoded decoded;
  v1::Framing framing = v1::FRAMING_JSON_LINES;
  bool close_after = false;  // frame sync is lost: reply, then close the connection
};

class RequestReader {
 public:
  explicit RequestReader(std::size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  void append(std::string_view bytes);
  // The next complete request, or nothing until more bytes arrive.
  std::optional<Incoming> next();
  // At end of input: the last line without its newline, or the error for a truncated frame.
  std::optional<Incoming> finish();
  // Bytes not yet consumed are read in the new framing (a client may send right after hello).
  void use_framing(v1::Framing framing) { framing_ = framing; }
  v1::Framing framing() const { return framing_; }

 private:
  std::optional<Incoming> next_line();
  std::optional<Incoming> next_frame();
  Incoming too_long() const;

  std::size_t max_frame_bytes_;
  v1::Framing framing_ = v1::FRAMING_JSON_LINES;
  std::string buffer_;
  std::size_t start_ = 0;    // buffer_ before this is consumed
  bool discarding_ = false;  // inside an oversized line: drop bytes until its newline
  bool lost_ = false;        // after a fatal frame nothing more is read
};

}  // namespace ramguard::control
