#include "control/frame_codec.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>

#include "control/command_names.hpp"

namespace ramguard::control {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// A varint is at most 10 bytes: a shorter buffer that does not end one may still be completed.
constexpr std::size_t kMaxVarintBytes = 10;

std::string hex_excerpt(std::string_view bytes) {
  std::string out;
  char pair[4];
  for (unsigned char c : bytes.substr(0, 16)) {
    std::snprintf(pair, sizeof pair, "%02x", c);
    out += pair;
  }
  return bytes.size() > 16 ? out + "..." : out;
}

// The first field protobuf kept as unknown, anywhere in `message`, as "path number N".
std::optional<std::string> unknown_field(const Message& message, const std::string& path) {
  const auto* reflection = message.GetReflection();
  const auto& unknown = reflection->GetUnknownFields(message);
  if (!unknown.empty()) return path + " field number " + std::to_string(unknown.field(0).number());
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const std::string inner = path + "." + field->json_name();
    if (!field->is_repeated()) {
      if (auto found = unknown_field(reflection->GetMessage(message, field), inner)) return found;
      continue;
    }
    for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
      if (auto found = unknown_field(reflection->GetRepeatedMessage(message, field, i), inner))
        return found;
    }
  }
  return std::nullopt;
}

}  // namespace

FrameDecoded decode_frame(std::string_view buffer, std::size_t max_frame_bytes) {
  FrameDecoded out;
  const auto* data = reinterpret_cast<const std::uint8_t*>(buffer.data());
  google::protobuf::io::CodedInputStream in(
      data, static_cast<int>(std::min<std::size_t>(buffer.size(), kMaxVarintBytes)));
  std::uint64_t length = 0;
  if (!in.ReadVarint64(&length)) {
    if (buffer.size() < kMaxVarintBytes) return out;  // the length is still arriving
    out.status = FrameDecoded::Status::kFatal;
    out.decoded = make_error(v1::Error::MALFORMED,
                             "request frame does not start with a varint "
                             "length (protobuf length-delimited framing): " +
                                 hex_excerpt(buffer.substr(0, kMaxVarintBytes)));
    return out;
  }
  if (length > max_frame_bytes) {
    out.status = FrameDecoded::Status::kFatal;
    out.decoded =
        make_error(v1::Error::RESOURCE_EXHAUSTED, "request frame of " + std::to_string(length) +
                                                      " bytes exceeds the frame limit of " +
                                                      std::to_string(max_frame_bytes) + " bytes");
    return out;
  }
  const auto header = static_cast<std::size_t>(in.CurrentPosition());
  if (buffer.size() - header < length) return out;
  const std::string_view body = buffer.substr(header, length);
  v1::Request request;
  bool parsed = false;
  {
    // protobuf would log each bad string to the daemon's stderr: the client's reply says it.
    google::protobuf::LogSilencer quiet;
    parsed = request.ParseFromArray(body.data(), static_cast<int>(body.size()));
  }
  if (!parsed) {
    out.status = FrameDecoded::Status::kFatal;
    out.decoded = make_error(v1::Error::MALFORMED,
                             "request frame of " + std::to_string(length) +
                                 " bytes is not a binary ramguard.v1.Request (a bad tag, a "
                                 "truncated field, or a string that is not UTF-8): " +
                                 hex_excerpt(body));
    return out;
  }
  out.status = FrameDecoded::Status::kComplete;
  out.consumed_bytes = header + body.size();
  // JSON lines refuse fields the server does not know; so does the binary framing.
  if (auto unknown = unknown_field(request, "request")) {
    out.decoded =
        make_error(v1::Error::UNKNOWN_COMMAND, "unknown command or field: " + *unknown +
                                                   " (commands: " + command_names() + ")");
  } else if (auto error = check_envelope(request)) {
    out.decoded = std::move(*error);
  } else {
    out.decoded = std::move(request);
  }
  return out;
}

v1::Error truncated_frame_error(std::string_view leftover) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(leftover.data());
  google::protobuf::io::CodedInputStream in(
      data, static_cast<int>(std::min<std::size_t>(leftover.size(), INT_MAX)));
  std::uint64_t length = 0;
  if (!in.ReadVarint64(&length)) {
    return make_error(v1::Error::MALFORMED,
                      "truncated request frame: the connection ended inside "
                      "its varint length (" +
                          std::to_string(leftover.size()) + " bytes)");
  }
  return make_error(v1::Error::MALFORMED,
                    "truncated request frame: the connection ended after " +
                        std::to_string(leftover.size() - in.CurrentPosition()) + " of its " +
                        std::to_string(length) + " bytes");
}

std::string encode_reply_frame(const v1::Reply& reply) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    if (google::protobuf::util::SerializeDelimitedToZeroCopyStream(reply, &stream)) return out;
  }
  return encode_reply_frame(
      error_reply(nullptr, make_error(v1::Error::INTERNAL, "cannot encode reply")));
}

std::string encode_reply_in(const v1::Reply& reply, v1::Framing framing) {
  return framing == v1::FRAMING_PROTOBUF_DELIMITED ? encode_reply_frame(reply)
                                                   : encode_reply(reply);
}

v1::Framing choose_framing(const v1::HelloRequest& hello, v1::Framing current) {
  if (current == v1::FRAMING_PROTOBUF_DELIMITED) return current;
  for (int offered : hello.accept_framings()) {
    if (offered == v1::FRAMING_PROTOBUF_DELIMITED) return v1::FRAMING_PROTOBUF_DELIMITED;
  }
  return v1::FRAMING_JSON_LINES;
}

}  // namespace ramguard::control
