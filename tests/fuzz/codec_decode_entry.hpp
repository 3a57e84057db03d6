#pragma once
// The one fuzz entry point for the control protocol's decoder, shared by the libFuzzer target
// (codec_fuzz) and the codec_fuzz_smoke gtest. Returns false when an invariant is broken:
// every line must decode to either a Request that carries a command and the current version,
// or an Error with a code and a message that names the problem; the reply for it must encode;
// and a decoded Request must survive re-encoding unchanged.

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "control/codec.hpp"

namespace ramguard::fuzz {

inline bool codec_decode_one(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  control::Decoded decoded = control::decode_request(line);
  if (const auto* error = std::get_if<v1::Error>(&decoded)) {
    if (error->message().empty() || error->code() == v1::Error::CODE_UNSPECIFIED) return false;
    const std::string reply = control::encode_reply(control::error_reply(nullptr, *error));
    // One line exactly: a reply that embeds a raw newline would desynchronize the client.
    return !reply.empty() && reply.back() == '\n' && reply.find('\n') == reply.size() - 1;
  }
  const auto& request = std::get<v1::Request>(decoded);
  if (request.command_case() == v1::Request::COMMAND_NOT_SET) return false;
  if (request.version() != control::kProtocolVersion) return false;
  if (control::command_name(request) == "none") return false;
  std::string again;
  if (!google::protobuf::util::MessageToJsonString(request, &again).ok()) return false;
  control::Decoded redecoded = control::decode_request(again);
  const auto* same = std::get_if<v1::Request>(&redecoded);
  // Compared field by field: maps (labels) serialize in no fixed order.
  return same != nullptr && google::protobuf::util::MessageDifferencer::Equals(*same, request);
}

}  // namespace ramguard::fuzz
