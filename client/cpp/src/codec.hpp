#pragma once
// JSON lines <-> protobuf messages (protobuf's JSON mapping), with errors naming the problem.

#include <string>
#include <string_view>

#include "ramguard.pb.h"

namespace ramguard::detail {

// One line of JSON, no newline. Throws ClientError(kUsage) when it exceeds kMaxRequestBytes.
std::string encode_request(const v1::Request& request);

// Parses a reply line; unknown fields are ignored (newer servers). Throws ClientError(kProtocol)
// naming the socket path and quoting the start of the garbled text.
v1::Reply decode_reply(std::string_view line, const std::string& socket_path);

}  // namespace ramguard::detail
