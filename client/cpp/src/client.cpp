#include "ramguard/client.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "codec.hpp"
#include "line_socket.hpp"

namespace ramguard {

const char* to_string(ClientError::Kind kind) noexcept {
  switch (kind) {
    case ClientError::Kind::kTransport:
      return "transport";
    case ClientError::Kind::kTimeout:
      return "timeout";
    case ClientError::Kind::kProtocol:
      return "protocol";
    case ClientError::Kind::kServer:
      return "server";
    case ClientError::Kind::kUsage:
      return "usage";
  }
  return "unknown";
}

struct Client::State {
  ClientOptions options;
  std::mutex mutex;  // one request in flight per connection
  detail::LineSocket socket;
  std::uint64_t next_id = 1;
  pid_t pid = ::getpid();  // in request ids; read once, not once per request
  using Deadline = std::chrono::steady_clock::time_point;
  // Per connection: whether its hello was exchanged, and the framing it chose.
  bool negotiated = false;
  v1::Framing framing = v1::FRAMING_JSON_LINES;

  std::string next_request_id() {
    return "cpp-" + std::to_string(pid) + "-" + std::to_string(next_id++);
  }
  void connect(Deadline deadline) {
    socket.connect(options.socket_path, deadline);
    negotiated = options.force_json_lines;
    framing = v1::FRAMING_JSON_LINES;
  }
  v1::Reply exchange(const v1::Request& request, Deadline deadline);
  void negotiate(Deadline deadline);

  Deadline deadline(std::chrono::milliseconds timeout) const {
    return std::chrono::steady_clock::now() + timeout;
  }
};

Client::Client(ClientOptions options) : state_(std::make_unique<State>()) {
  options.socket_path = default_socket_path(options.socket_path);
  state_->options = std::move(options);
  state_->connect(state_->deadline(state_->options.timeout));
}

// One request and its reply in the connection's framing.
v1::Reply Client::State::exchange(const v1::Request& request, Deadline deadline) {
  const std::string& path = options.socket_path;
  if (framing == v1::FRAMING_PROTOBUF_DELIMITED) {
    socket.write_bytes(detail::encode_request_frame(request), deadline);
    const std::string frame = socket.read_frame(options.max_reply_bytes, deadline);
    try {
      return detail::decode_reply_frame(frame, path);
    } catch (const ClientError&) {
      socket.close();  // a garbled frame: the next one cannot be trusted to start in step
      throw;
    }
  }
  socket.write_line(detail::encode_request(request), deadline);
  return detail::decode_reply(socket.read_line(options.max_reply_bytes, deadline), path);
}

// The hello that offers the binary framing, once per connection. A daemon that predates the
// offer refuses the unknown field: the connection stays on JSON lines.
void Client::State::negotiate(Deadline deadline) {
  v1::Request request;
  request.set_version(kProtocolVersion);
  request.set_request_id(next_request_id());
  request.mutable_hello()->set_client(options.client_name);
  request.mutable_hello()->add_accept_framings(v1::FRAMING_PROTOBUF_DELIMITED);
  const v1::Reply reply = exchange(request, deadline);
  if (reply.has_error() && reply.error().code() != v1::Error::UNKNOWN_COMMAND) {
    socket.close();  // e.g. a connection limit: the daemon closes after saying so
    throw ClientError(
        ClientError::Kind::kServer,
        "ramguardd: " + v1::Error::Code_Name(reply.error().code()) + ": " + reply.error().message(),
        reply.error().code());
  }
  if (!reply.has_error() && reply.request_id() != request.request_id()) {
    socket.close();
    throw ClientError(ClientError::Kind::kProtocol,
                      "reply from ramguard socket '" + options.socket_path +
                          "' to the hello answers request '" + reply.request_id() + "'");
  }
  negotiated = true;
  framing = reply.has_error() ? v1::FRAMING_JSON_LINES : reply.hello().framing();
}

Client::Client(std::string socket_path, std::chrono::milliseconds timeout)
    : Client(ClientOptions{.socket_path = std::move(socket_path), .timeout = timeout}) {}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const std::string& Client::socket_path() const {
  return state_->options.socket_path;
}

const ClientOptions& Client::options() const {
  return state_->options;
}

v1::Reply Client::call(v1::Request request) {
  return call(std::move(request), state_->options.timeout);
}

v1::Reply Client::call(v1::Request request, std::chrono::milliseconds timeout) {
  std::lock_guard lock(state_->mutex);
  const std::string& path = state_->options.socket_path;
  request.set_version(kProtocolVersion);
  if (request.request_id().empty()) request.set_request_id(state_->next_request_id());
  const auto deadline = state_->deadline(timeout);
  if (state_->socket.peer_closed()) state_->connect(deadline);
  if (!state_->negotiated) state_->negotiate(deadline);
  v1::Reply reply = state_->exchange(request, deadline);
  // A hello of the caller's own may have switched the connection (call() with an offer).
  if (reply.has_hello()) state_->framing = reply.hello().framing();

  if (reply.has_error()) {
    // A request the server could not parse has no id to echo; anything else must match.
    if (!reply.request_id().empty() && reply.request_id() != request.request_id()) {
      state_->socket.close();
    }
    throw ClientError(
        ClientError::Kind::kServer,
        "ramguardd: " + v1::Error::Code_Name(reply.error().code()) + ": " + reply.error().message(),
        reply.error().code());
  }
  if (reply.request_id() != request.request_id()) {
    state_->socket.close();  // the stream is out of step; start afresh on the next call
    throw ClientError(ClientError::Kind::kProtocol,
                      "reply from ramguard socket '" + path + "' answers request '" +
                          reply.request_id() + "', expected '" + request.request_id() + "'");
  }
  if (reply.version() > kProtocolVersion) {
    throw ClientError(ClientError::Kind::kProtocol,
                      "ramguardd at '" + path + "' speaks protocol version " +
                          std::to_string(reply.version()) + ", this client speaks " +
                          std::to_string(kProtocolVersion));
  }
  // Result field numbers equal command field numbers, so a reply for another command shows.
  const int expected = static_cast<int>(request.command_case());
  const int got = static_cast<int>(reply.result_case());
  if (got != 0 && got != expected) {
    throw ClientError(ClientError::Kind::kProtocol,
                      "reply from ramguard socket '" + path + "' carries result field " +
                          std::to_string(got) + " for command field " + std::to_string(expected));
  }
  return reply;
}

v1::HelloReply Client::hello() {
  v1::Request request;
  request.mutable_hello()->set_client(state_->options.client_name);
  return call(std::move(request)).hello();
}

v1::AdmitReply Client::admit(const AdmitOptions& options) {
  v1::Request request;
  v1::AdmitRequest& admit = *request.mutable_admit();
  admit.set_job(options.job);
  admit.set_estimate_bytes(options.estimate_bytes);
  if (options.model_bytes != 0 || options.parameter_count != 0) {
    admit.mutable_model()->set_model_bytes(options.model_bytes);
    admit.mutable_model()->set_parameter_count(options.parameter_count);
    admit.mutable_model()->set_bytes_per_parameter(options.bytes_per_parameter);
  }
  admit.set_plan(options.plan);
  admit.set_hosts(options.hosts);
  admit.set_pid(options.pid);
  admit.set_use_calibrated(options.use_calibrated);
  admit.set_scope(options.scope);
  return call(std::move(request)).admit();
}

v1::ReleaseReply Client::release(const std::string& reservation_id) {
  v1::Request request;
  request.mutable_release()->set_reservation_id(reservation_id);
  return call(std::move(request)).release();
}

Run Client::start_run(const RunOptions& options) {
  // Inside a launcher's run (the Slurm plugin sets RAMGUARD_RUN_ATTACH with RAMGUARD_RUN): join
  // it rather than start a second run on the same process; the launcher ends it.
  if (options.pid == 0 || options.pid == static_cast<std::uint32_t>(::getpid())) {
    const char* attach = std::getenv(protocol::kRunAttachEnv);
    const char* launched = std::getenv(protocol::kRunEnv);
    if (attach != nullptr && *attach != '\0' && launched != nullptr && *launched != '\0') {
      return Run(*this, launched);
    }
  }
  v1::Request request;
  v1::RunStartRequest& start = *request.mutable_run_start();
  start.set_pid(options.pid);
  start.set_job(options.job);
  for (const auto& [key, value] : options.labels) (*start.mutable_labels())[key] = value;
  start.set_model_bytes(options.model_bytes);
  start.set_declared_rounds(options.declared_rounds);
  start.set_hosts(options.hosts);
  start.set_reservation_id(options.reservation_id);
  start.set_scope(options.scope);
  start.set_cgroup_path(options.cgroup_path);
  v1::RunStartReply reply = call(std::move(request)).run_start();
  if (reply.run_id().empty()) {
    throw ClientError(ClientError::Kind::kProtocol,
                      "reply from ramguard socket '" + socket_path() + "' names no run id");
  }
  std::string run_id = reply.run_id();
  return Run(*this, std::move(run_id), std::move(reply));
}

v1::StatusReply Client::status(const std::string& run_id) {
  v1::Request request;
  request.mutable_status()->set_run_id(run_id);
  return call(std::move(request)).status();
}

v1::ReportReply Client::report(const std::string& run_id, bool include_samples) {
  v1::Request request;
  request.mutable_report()->set_run_id(run_id);
  request.mutable_report()->set_include_samples(include_samples);
  return call(std::move(request)).report();
}

v1::CompareReply Client::compare(const std::vector<std::string>& run_ids,
                                 const std::map<std::string, std::string>& labels) {
  v1::Request request;
  v1::CompareRequest& compare = *request.mutable_compare();
  for (const std::string& id : run_ids) compare.add_run_ids(id);
  for (const auto& [key, value] : labels) (*compare.mutable_labels())[key] = value;
  return call(std::move(request)).compare();
}

v1::ListRunsReply Client::list_runs(std::uint32_t limit) {
  v1::Request request;
  request.mutable_list_runs()->set_limit(limit);
  return call(std::move(request)).list_runs();
}

}  // namespace ramguard
