#include "codec.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "ramguard/client.hpp"

namespace ramguard::detail {
namespace {

std::string excerpt(std::string_view text) {
  constexpr std::size_t kMax = 80;
  std::string out(text.substr(0, kMax));
  for (char& c : out) {
    if (c < 0x20 || c == 0x7f) c = '?';
  }
  return text.size() > kMax ? out + "..." : out;
}

}  // namespace

std::string encode_request(const v1::Request& request) {
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(request, &json);
  if (!status.ok()) {
    throw ClientError(ClientError::Kind::kUsage,
                      "cannot encode request: " + std::string(status.message()));
  }
  if (json.size() + 1 > kMaxRequestBytes) {
    throw ClientError(ClientError::Kind::kUsage, "request of " + std::to_string(json.size() + 1) +
                                                     " bytes exceeds the frame limit of " +
                                                     std::to_string(kMaxRequestBytes) + " bytes");
  }
  return json;
}

v1::Reply decode_reply(std::string_view line, const std::string& socket_path) {
  v1::Reply reply;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(line.data(), line.size()), &reply, options);
  if (!status.ok()) {
    throw ClientError(ClientError::Kind::kProtocol,
                      "garbled reply from ramguard socket '" + socket_path +
                          "': " + std::string(status.message()) + " in '" + excerpt(line) + "'");
  }
  return reply;
}

std::string encode_request_frame(const v1::Request& request) {
  const std::size_t body = request.ByteSizeLong();
  if (body > kMaxRequestBytes) {
    throw ClientError(ClientError::Kind::kUsage, "request of " + std::to_string(body) +
                                                     " bytes exceeds the frame limit of " +
                                                     std::to_string(kMaxRequestBytes) + " bytes");
  }
  std::string frame;
  google::protobuf::io::StringOutputStream stream(&frame);
  if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(request, &stream)) {
    throw ClientError(ClientError::Kind::kUsage, "cannot encode request");
  }
  return frame;
}

std::optional<std::size_t> frame_size(std::string_view buffer, std::size_t max_bytes,
                                      const std::string& socket_path) {
  constexpr std::size_t kMaxVarintBytes = 10;
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const std::uint8_t*>(buffer.data()),
      static_cast<int>(std::min(buffer.size(), kMaxVarintBytes)));
  std::uint64_t length = 0;
  if (!in.ReadVarint64(&length)) {
    if (buffer.size() < kMaxVarintBytes) return std::nullopt;
    throw ClientError(ClientError::Kind::kProtocol,
                      "reply from ramguard socket '" + socket_path +
                          "' does not start with a varint length (binary framing)");
  }
  if (length > max_bytes) {
    throw ClientError(ClientError::Kind::kProtocol, "reply from ramguard socket '" + socket_path +
                                                        "' of " + std::to_string(length) +
                                                        " bytes exceeds the frame limit of " +
                                                        std::to_string(max_bytes) + " bytes");
  }
  return static_cast<std::size_t>(in.CurrentPosition()) + static_cast<std::size_t>(length);
}

v1::Reply decode_reply_frame(std::string_view frame, const std::string& socket_path) {
  google::protobuf::io::ArrayInputStream stream(frame.data(), static_cast<int>(frame.size()));
  v1::Reply reply;
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&reply, &stream, &clean_eof)) {
    throw ClientError(ClientError::Kind::kProtocol, "garbled binary reply from ramguard socket '" +
                                                        socket_path + "' (" +
                                                        std::to_string(frame.size()) + " bytes)");
  }
  return reply;
}

}  // namespace ramguard::detail
