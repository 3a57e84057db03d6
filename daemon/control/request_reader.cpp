#include "control/request_reader.hpp"

#include "control/frame_codec.hpp"

namespace ramguard::control {

void RequestReader::append(std::string_view bytes) {
  if (lost_) return;
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<Incoming> RequestReader::next() {
  if (lost_) return std::nullopt;
  return framing_ == v1::FRAMING_PROTOBUF_DELIMITED ? next_frame() : next_line();
}

Incoming RequestReader::too_long() const {
  return {
      make_error(v1::Error::RESOURCE_EXHAUSTED, "request line longer than the frame limit of " +
                                                    std::to_string(max_frame_bytes_) + " bytes"),
      v1::FRAMING_JSON_LINES};
}

std::optional<Incoming> RequestReader::next_line() {
  const std::size_t newline = buffer_.find('\n', start_);
  if (newline == std::string::npos) {
    // Nothing of an oversized line is kept: the buffer stays within the limit plus one read.
    if (discarding_ || buffer_.size() - start_ > max_frame_bytes_) {
      discarding_ = true;
      buffer_.clear();
      start_ = 0;
    }
    return std::nullopt;
  }
  const std::string_view line(buffer_.data() + start_, newline - start_);
  start_ = newline + 1;
  if (discarding_ || line.size() > max_frame_bytes_) {
    discarding_ = false;
    return too_long();
  }
  return Incoming{decode_request(line), v1::FRAMING_JSON_LINES};  // an empty line gets its error
}

std::optional<Incoming> RequestReader::next_frame() {
  FrameDecoded frame = decode_frame(std::string_view(buffer_).substr(start_), max_frame_bytes_);
  switch (frame.status) {
    case FrameDecoded::Status::kIncomplete:
      return std::nullopt;
    case FrameDecoded::Status::kComplete:
      start_ += frame.consumed_bytes;
      return Incoming{std::move(frame.decoded), v1::FRAMING_PROTOBUF_DELIMITED};
    case FrameDecoded::Status::kFatal:
      break;
  }
  lost_ = true;
  buffer_.clear();
  start_ = 0;
  return Incoming{std::move(frame.decoded), v1::FRAMING_PROTOBUF_DELIMITED, true};
}

std::optional<Incoming> RequestReader::finish() {
  if (lost_) return std::nullopt;
  const std::string_view rest = std::string_view(buffer_).substr(start_);
  if (framing_ == v1::FRAMING_PROTOBUF_DELIMITED) {
    if (rest.empty()) return std::nullopt;
    return Incoming{truncated_frame_error(rest), framing_, true};
  }
  if (discarding_) return too_long();
  if (rest.empty()) return std::nullopt;
  return Incoming{decode_request(rest), framing_};
}

}  // namespace ramguard::control
