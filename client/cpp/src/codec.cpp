#include "codec.hpp"

#include <google/protobuf/util/json_util.h>

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

}  // namespace ramguard::detail
