// hello, start, mark, round-end, end.
#include <ostream>

#include "commands.hpp"
#include "output.hpp"

namespace ramguard::cli {

Client connect(const GlobalOptions& global) {
  ClientOptions options;
  options.socket_path = global.socket_path;
  options.timeout = global.timeout;
  // A shell's mark is one command, not a training step: --timeout bounds it as every call.
  options.mark_timeout = global.timeout;
  options.client_name = "ramguard-cli/0.1.0";
  // One or two requests per invocation: a framing hello would only add a round trip.
  options.force_json_lines = true;
  return Client(std::move(options));
}

int cmd_hello(const GlobalOptions& g, std::ostream& out) {
  Client client = connect(g);
  v1::Request request;
  request.mutable_hello()->set_client("ramguard-cli/0.1.0");
  const v1::Reply reply = client.call(std::move(request));
  if (g.json) {
    out << to_json(reply.hello()) << "\n";
    return kExitOk;
  }
  out << "ramguardd " << reply.server_version() << " at " << client.socket_path() << ": protocol "
      << reply.hello().protocol_version() << ", budget "
      << bytes_text(static_cast<double>(reply.hello().budget_bytes()), g.binary_units)
      << ", you are pid " << reply.hello().peer_pid() << " uid " << reply.hello().peer_uid()
      << "\n";
  return kExitOk;
}

int cmd_start(const GlobalOptions& g, const StartArgs& a, std::ostream& out) {
  Client client = connect(g);
  const Run run = client.start_run(RunOptions{.pid = a.pid,
                                              .job = a.job,
                                              .labels = a.labels,
                                              .model_bytes = a.model_bytes,
                                              .declared_rounds = a.rounds,
                                              .hosts = a.hosts,
                                              .reservation_id = a.reservation_id,
                                              .scope = a.scope,
                                              .cgroup_path = a.cgroup_path});
  // Plain output is the run id alone, for RUN=$(ramguard start ...).
  out << (g.json ? to_json(run.start_reply()) : run.id()) << "\n";
  return kExitOk;
}

int cmd_mark(const GlobalOptions& g, const MarkArgs& a, std::ostream& out) {
  Client client = connect(g);
  Run run(client, a.run_id);
  const auto kind = a.begin ? v1::MarkRequest::PHASE_BEGIN : v1::MarkRequest::PHASE_END;
  const v1::MarkReply reply = run.mark(kind, a.phase, a.round);
  out << (g.json ? to_json(reply) + "\n" : mark_text(kind, a.phase, reply, g.binary_units));
  return kExitOk;
}

int cmd_round_end(const GlobalOptions& g, const RoundEndArgs& a, std::ostream& out) {
  Client client = connect(g);
  Run run(client, a.run_id);
  const v1::MarkReply reply = run.round_end(a.round);
  out << (g.json ? to_json(reply) + "\n"
                 : mark_text(v1::MarkRequest::ROUND_END, {}, reply, g.binary_units));
  return kExitOk;
}

int cmd_end(const GlobalOptions& g, const EndArgs& a, std::ostream& out) {
  Client client = connect(g);
  Run run(client, a.run_id);
  const v1::RunEndReply reply = run.end();
  out << (g.json ? to_json(reply) + "\n" : run_end_text(a.run_id, reply, g.binary_units));
  return kExitOk;
}

v1::ListRunsReply list_runs(Client& client, const RunsArgs& a) {
  if (a.labels.empty()) return client.list_runs(a.limit);
  v1::ListRunsReply all = client.list_runs(a.limit != 0 ? a.limit : 1000);
  v1::ListRunsReply matching;
  for (v1::RunStatus& run : *all.mutable_runs()) {
    bool carries = true;
    for (const auto& [key, value] : a.labels) {
      const auto found = run.labels().find(key);
      carries = carries && found != run.labels().end() && found->second == value;
    }
    if (carries) *matching.add_runs() = std::move(run);
  }
  return matching;
}

}  // namespace ramguard::cli
