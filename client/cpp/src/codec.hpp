#pragma once
// JSON lines <-> protobuf messages (protobuf's JSON mapping), and the binary framing
// (protobuf's length-delimited encoding), with errors naming the problem.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ramguard.pb.h"

namespace ramguard::detail {

// One line of JSON, no newline. Throws ClientError(kUsage) when it exceeds kMaxRequestBytes.
std::string encode_request(const v1::Request& request);

// Parses a reply line; unknown fields are ignored (newer servers). Throws ClientError(kProtocol)
// naming the socket path and quoting the start of the garbled text.
v1::Reply decode_reply(std::string_view line, const std::string& socket_path);

// Varint length + binary request. Throws ClientError(kUsage) when it exceeds kMaxRequestBytes.
std::string encode_request_frame(const v1::Request& request);

// The size of the frame at the start of `buffer` (header + body), or nothing while its length
// is incomplete. Throws ClientError(kProtocol) when the length is no varint or over max_bytes.
std::optional<std::size_t> frame_size(std::string_view buffer, std::size_t max_bytes,
                                      const std::string& socket_path);

// Parses a whole reply frame (as measured by frame_size); throws ClientError(kProtocol).
v1::Reply decode_reply_frame(std::string_view frame, const std::string& socket_path);

}  // namespace ramguard::detail
