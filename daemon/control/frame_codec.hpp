#pragma once
// The binary framing (FRAMING_PROTOBUF_DELIMITED), as pure functions next to the JSON lines of
// codec.hpp: protobuf's length-delimited encoding, a varint byte length and then the binary
// ramguard.v1.Request or Reply. A request frame gets the same checks as a JSON line (version,
// one command set, no field unknown to this server); decoding never throws.

#include <cstddef>
#include <string>
#include <string_view>

#include "control/codec.hpp"

namespace ramguard::control {

struct FrameDecoded {
  enum class Status {
    kIncomplete,  // more bytes are needed; nothing consumed
    kComplete,    // one frame consumed: `decoded` is its Request, or the Error to reply
    kFatal,       // `decoded` is the Error to reply; frame sync is lost: close after replying
  };
  Status status = Status::kIncomplete;
  std::size_t consumed_bytes = 0;  // header + body, for kComplete
  Decoded decoded = v1::Error{};
};

// Decodes the frame at the start of `buffer`. A length above max_frame_bytes, a length that is
// not a varint, or a body that is not a binary Request is fatal.
FrameDecoded decode_frame(std::string_view buffer, std::size_t max_frame_bytes);

// The error for bytes left over when the connection ended inside a frame.
v1::Error truncated_frame_error(std::string_view leftover);

// One reply frame: varint length + serialized Reply.
std::string encode_reply_frame(const v1::Reply& reply);

// The reply encoded in `framing` (a JSON line with its newline, or a frame).
std::string encode_reply_in(const v1::Reply& reply, v1::Framing framing);

// The framing after a hello: binary when offered (or already in use), else JSON lines.
v1::Framing choose_framing(const v1::HelloRequest& hello, v1::Framing current);

}  // namespace ramguard::control
