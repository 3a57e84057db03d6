#pragma once
// The wire format, as pure functions: one JSON object per line in protobuf's JSON mapping of
// ramguard.v1.Request / Reply. Decoding never throws; a bad line becomes an Error reply that
// names the problem.

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "ramguard.pb.h"
#include "ramguard/base/protocol.hpp"

namespace ramguard::control {

inline constexpr std::uint32_t kProtocolVersion = protocol::kVersion;  // ramguard/base/protocol.hpp

// Either a request ready to dispatch, or the error to send back.
using Decoded = std::variant<v1::Request, v1::Error>;

v1::Error make_error(v1::Error::Code code, std::string message);

// Parses and validates the envelope: JSON syntax, known fields, version, one command set.
Decoded decode_request(std::string_view line);

// The version is the current one and a command is set (both framings check this).
std::optional<v1::Error> check_envelope(const v1::Request& request);

// Range checks shared by every command: each PID field must be 0 (the caller) or 1..kMaxPid.
// The error names the field and the value, e.g. "admit.pid 4294967295 is out of range ...".
std::optional<v1::Error> check_fields(const v1::Request& request);

// One line, '\n'-terminated. Zero values are printed so a shell user sees "admitted": false.
std::string encode_reply(const v1::Reply& reply);

// The reply envelope for a request (version, id, server version) with an error set.
v1::Reply error_reply(const v1::Request* request, v1::Error error);

// The name of the command a request carries, as written on the wire ("runStart").
std::string command_name(const v1::Request& request);

}  // namespace ramguard::control
