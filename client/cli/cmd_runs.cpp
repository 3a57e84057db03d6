// hello, start, mark, round-end, end: built from their arguments and run.
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
  options.client_name = "ramguard-cli/" RAMGUARD_VERSION;
  // One or two requests per invocation: a framing hello would only add a round trip.
  options.force_json_lines = true;
  return Client(std::move(options));
}

HelloArgs build_hello(const Scanned& s) {
  expect_positionals(s, "hello", 0, 0, "");
  return {};
}

StartArgs build_start(const Scanned& s) {
  expect_positionals(s, "start", 0, 0, "");
  StartArgs a;
  a.pid = u32_option(s, "pid");
  a.job = text_option(s, "job");
  a.labels = label_options(s);
  a.model_bytes = size_option(s, "model-bytes");
  a.rounds = u32_option(s, "rounds");
  a.hosts = u32_option(s, "hosts");
  a.reservation_id = text_option(s, "reservation");
  a.scope = scope_option(s);
  a.cgroup_path = text_option(s, "cgroup");
  // Without a PID the daemon would guard the process that asks: this CLI, which exits at once.
  if (s.has("pid") && s.has("self")) throw UsageError{"--pid and --self exclude each other"};
  if (a.pid == 0 && !s.has("self")) {
    throw UsageError{
        "ramguard start needs --pid PID, the coordinator's process (this command exits at "
        "once, so guarding it would end the run as 'exited'); --self guards the calling "
        "process anyway"};
  }
  return a;
}

MarkArgs build_mark(const Scanned& s) {
  expect_positionals(s, "mark", 3, 3, "RUN begin|end PHASE");
  const std::string& kind = s.positionals[1];
  if (kind != "begin" && kind != "end") {
    throw UsageError{"ramguard mark: '" + kind + "' is neither begin nor end"};
  }
  return MarkArgs{s.positionals[0], kind == "begin", phase_name(s.positionals[2]),
                  u32_option(s, "round")};
}

RoundEndArgs build_round_end(const Scanned& s) {
  expect_positionals(s, "round-end", 1, 1, "RUN");
  return RoundEndArgs{s.positionals[0], u32_option(s, "round")};
}

EndArgs build_end(const Scanned& s) {
  expect_positionals(s, "end", 1, 1, "RUN");
  return EndArgs{s.positionals[0]};
}

int cmd_hello(const GlobalOptions& g, const HelloArgs&, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  v1::Request request;
  request.mutable_hello()->set_client("ramguard-cli/" RAMGUARD_VERSION);
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

int cmd_start(const GlobalOptions& g, const StartArgs& a, std::ostream& out, std::ostream&) {
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

int cmd_mark(const GlobalOptions& g, const MarkArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  Run run(client, a.run_id);
  const auto kind = a.begin ? v1::MarkRequest::PHASE_BEGIN : v1::MarkRequest::PHASE_END;
  const v1::MarkReply reply = run.mark(kind, a.phase, a.round);
  out << (g.json ? to_json(reply) + "\n" : mark_text(kind, a.phase, reply, g.binary_units));
  return kExitOk;
}

int cmd_round_end(const GlobalOptions& g, const RoundEndArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  Run run(client, a.run_id);
  const v1::MarkReply reply = run.round_end(a.round);
  out << (g.json ? to_json(reply) + "\n"
                 : mark_text(v1::MarkRequest::ROUND_END, {}, reply, g.binary_units));
  return kExitOk;
}

int cmd_end(const GlobalOptions& g, const EndArgs& a, std::ostream& out, std::ostream&) {
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
