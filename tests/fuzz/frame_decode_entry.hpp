#pragma once
// The one fuzz entry point for the binary framing's decoder (control/frame_codec.hpp and the
// RequestReader in that framing), shared by the libFuzzer target (frame_fuzz) and the
// frame_fuzz_smoke gtest. The input is the byte stream a client sends after the switch. Returns
// false when an invariant is broken:
//   - each frame decodes to a Request carrying a command and the current version, or an Error
//     with a code and a message; a fatal error ends the stream, and its reply frame encodes;
//   - a decoded Request, framed again, decodes to the same Request, consuming exactly that frame;
//   - the RequestReader yields the same outcomes whether the stream arrives whole or split.

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <google/protobuf/util/field_comparator.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "control/frame_codec.hpp"
#include "control/request_reader.hpp"

namespace ramguard::fuzz {

// Small enough that the fuzzer reaches the limit with short inputs.
inline constexpr std::size_t kFrameFuzzMaxBytes = 1024;

inline bool frame_error_ok(const v1::Error& error) {
  if (error.message().empty() || error.code() == v1::Error::CODE_UNSPECIFIED) return false;
  const std::string frame = control::encode_reply_frame(control::error_reply(nullptr, error));
  google::protobuf::io::ArrayInputStream stream(frame.data(), static_cast<int>(frame.size()));
  v1::Reply reply;
  return google::protobuf::util::ParseDelimitedFromZeroCopyStream(&reply, &stream, nullptr) &&
         reply.error().message() == error.message();
}

inline bool frame_request_ok(const v1::Request& request) {
  if (request.command_case() == v1::Request::COMMAND_NOT_SET) return false;
  if (request.version() != control::kProtocolVersion) return false;
  std::string frame;
  {
    google::protobuf::io::StringOutputStream stream(&frame);
    if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(request, &stream)) {
      return false;
    }
  }
  // A request is framed again only when it fits: re-encoding may grow it (maps, default order).
  if (frame.size() > kFrameFuzzMaxBytes) return true;
  const control::FrameDecoded again = control::decode_frame(frame, kFrameFuzzMaxBytes);
  const auto* same = std::get_if<v1::Request>(&again.decoded);
  if (again.consumed_bytes != frame.size() || same == nullptr) return false;
  // A double the client sent may be a NaN: it must come back a NaN.
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  return differencer.Compare(*same, request);
}

// What a reader yields for the stream, as text, for comparing two ways of feeding it.
inline std::vector<std::string> reader_outcomes(std::string_view stream, std::size_t split) {
  control::RequestReader reader(kFrameFuzzMaxBytes);
  reader.use_framing(v1::FRAMING_PROTOBUF_DELIMITED);
  std::vector<std::string> out;
  auto drain = [&] {
    while (auto incoming = reader.next()) {
      const auto* error = std::get_if<v1::Error>(&incoming->decoded);
      out.push_back(error != nullptr
                        ? "error " + error->message()
                        : std::get<v1::Request>(incoming->decoded).SerializeAsString());
    }
  };
  reader.append(stream.substr(0, split));
  drain();
  reader.append(stream.substr(split));
  drain();
  if (auto last = reader.finish())
    out.push_back("end " + std::get<v1::Error>(last->decoded).message());
  return out;
}

inline bool frame_decode_stream(const std::uint8_t* data, std::size_t size) {
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  std::string_view rest = stream;
  while (!rest.empty()) {
    control::FrameDecoded frame = control::decode_frame(rest, kFrameFuzzMaxBytes);
    if (frame.status == control::FrameDecoded::Status::kIncomplete) {
      if (frame.consumed_bytes != 0) return false;
      if (!frame_error_ok(control::truncated_frame_error(rest))) return false;
      break;
    }
    if (const auto* error = std::get_if<v1::Error>(&frame.decoded)) {
      if (!frame_error_ok(*error)) return false;
    } else if (!frame_request_ok(std::get<v1::Request>(frame.decoded))) {
      return false;
    }
    if (frame.status == control::FrameDecoded::Status::kFatal) break;
    if (frame.consumed_bytes == 0 || frame.consumed_bytes > rest.size()) return false;
    rest.remove_prefix(frame.consumed_bytes);
  }
  const std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  return reader_outcomes(stream, size) == reader_outcomes(stream, split);
}

}  // namespace ramguard::fuzz
