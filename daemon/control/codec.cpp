#include "control/codec.hpp"

#include <google/protobuf/util/json_util.h>

#include "control/command_names.hpp"
#include "control/json_writer.hpp"
#include "control/limits.hpp"
#include "ramguard/base/protocol.hpp"
#include "ramguard/base/utf8.hpp"

namespace ramguard::control {
namespace {

std::string printable(std::string_view text, std::size_t max_chars = 80) {
  std::string out;
  for (char c : text.substr(0, max_chars)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

}  // namespace

v1::Error make_error(v1::Error::Code code, std::string message) {
  v1::Error error;
  error.set_code(code);
  // A message may quote what the client sent; protobuf logs a string that is not UTF-8.
  error.set_message(valid_utf8(message));
  return error;
}

Decoded decode_request(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty()) return make_error(v1::Error::MALFORMED, "empty request line");
  if (line.front() != '{') {
    return make_error(v1::Error::MALFORMED,
                      "request is not a JSON object: '" + printable(line) + "'");
  }
  v1::Request request;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(line.data(), line.size()), &request, options);
  if (!status.ok()) {
    std::string detail(status.message());
    // protobuf names an unknown top-level key as "Cannot find field: x"; a key that is not a
    // field of Request is an unknown command when it is an object, which is what clients send.
    const bool unknown_field = detail.find("Cannot find field") != std::string::npos;
    if (unknown_field) {
      return make_error(v1::Error::UNKNOWN_COMMAND, "unknown command or field: " + detail +
                                                        " (commands: " + command_names() + ")");
    }
    return make_error(v1::Error::MALFORMED, "malformed request: " + detail);
  }
  if (auto error = check_envelope(request)) return std::move(*error);
  return request;
}

std::optional<v1::Error> check_envelope(const v1::Request& request) {
  if (request.version() == 0) {
    return make_error(v1::Error::UNSUPPORTED_VERSION,
                      "request has no \"version\"; this server speaks protocol version " +
                          std::to_string(kProtocolVersion));
  }
  if (request.version() != kProtocolVersion) {
    return make_error(v1::Error::UNSUPPORTED_VERSION,
                      "protocol version " + std::to_string(request.version()) +
                          " is not supported; this server speaks version " +
                          std::to_string(kProtocolVersion));
  }
  // The id is echoed in the reply and logged: a megabyte of it would be echoed whole. The
  // error carries no id (the request is treated as unparsed), which clients accept.
  if (request.request_id().size() > protocol::kMaxRequestIdBytes) {
    return make_error(v1::Error::INVALID_ARGUMENT,
                      "requestId of " + std::to_string(request.request_id().size()) +
                          " bytes is out of range: at most " +
                          std::to_string(protocol::kMaxRequestIdBytes) + " bytes");
  }
  if (request.command_case() == v1::Request::COMMAND_NOT_SET) {
    return make_error(v1::Error::UNKNOWN_COMMAND,
                      "request carries no command; expected one of " + command_names());
  }
  return std::nullopt;
}

std::optional<v1::Error> check_fields(const v1::Request& request) {
  auto check_pid = [](const char* field, std::uint32_t pid) -> std::optional<v1::Error> {
    if (pid <= protocol::kMaxPid) return std::nullopt;
    return make_error(v1::Error::INVALID_ARGUMENT, std::string(field) + " " + std::to_string(pid) +
                                                       " is out of range: a PID is 1 to " +
                                                       std::to_string(protocol::kMaxPid) +
                                                       ", or 0 for the caller's own");
  };
  switch (request.command_case()) {
    case v1::Request::kRunStart:
      return check_pid("runStart.pid", request.run_start().pid());
    case v1::Request::kAdmit:
      return check_pid("admit.pid", request.admit().pid());
    default:
      return std::nullopt;
  }
}

std::string encode_reply(const v1::Reply& reply) {
  std::string fast;
  fast.reserve(256);
  if (append_json(reply, fast)) {
    fast += '\n';
    return fast;
  }
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(reply, &out, options);
  if (!status.ok()) {
    out = R"({"version":1,"error":{"code":"INTERNAL","message":"cannot encode reply"}})";
  }
  out += '\n';
  return out;
}

v1::Reply error_reply(const v1::Request* request, v1::Error error) {
  v1::Reply reply;
  reply.set_version(kProtocolVersion);
  if (request != nullptr) reply.set_request_id(request->request_id());
  *reply.mutable_error() = std::move(error);
  return reply;
}

std::string command_name(const v1::Request& request) {
  const auto* field = v1::Request::descriptor()->FindFieldByNumber(request.command_case());
  return field != nullptr ? field->json_name() : "none";
}

}  // namespace ramguard::control
