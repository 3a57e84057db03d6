#include "step_guard.hpp"

#include <sys/wait.h>

#include <chrono>
#include <optional>
#include <thread>

#include "ramguard/client.hpp"
#include "ramguard/units.hpp"

namespace ramguard::slurm {
namespace {

using Decision = StartOutcome::Decision;
using Clock = std::chrono::steady_clock;

ClientOptions client_options(const PluginConfig& config) {
  return ClientOptions{.socket_path = config.socket_path,
                       .timeout = config.timeout,
                       .client_name = "spank_ramguard/0.1.0"};
}

// Transport and timeouts are "the daemon is not there"; anything else is an answer.
bool unreachable(const ClientError& e) {
  return e.kind() == ClientError::Kind::kTransport || e.kind() == ClientError::Kind::kTimeout;
}

StartOutcome without_daemon(const PluginConfig& config, const std::string& why) {
  StartOutcome out;
  if (config.required) {
    out.decision = Decision::kRefused;
    out.lines.push_back("ramguard: step refused: ramguardd is required and unreachable: " + why);
  } else {
    out.decision = Decision::kUnguarded;
    out.lines.push_back("ramguard: warning: ramguardd unreachable, the step runs unguarded: " +
                        why);
  }
  return out;
}

// The daemon's reason is the whole sum, every term with its figure; the source of the estimate
// is added when the reason does not name it.
std::string admission_terms(const v1::AdmitReply& r) {
  std::string text = r.reason();
  if (!r.estimate_source().empty() && text.find(r.estimate_source()) == std::string::npos) {
    text += " (estimate from " + r.estimate_source() + ")";
  }
  return text;
}

void release_quietly(Client& client, const std::string& reservation) {
  if (reservation.empty()) return;
  try {
    client.release(reservation);
  } catch (const ClientError&) {
    // Unclaimed, it expires with its lease.
  }
}

bool decided(const v1::RunStatus& run) {
  if (run.state() == "active") return false;
  if (run.state() != "ended") return true;  // exited or lost: no release verdict follows
  for (const v1::Verdict& v : run.verdicts()) {
    if (v.kind() == "release") return true;
  }
  return false;
}

bool worth_a_line(const v1::Verdict& v) {
  if (v.cleared()) return false;
  return v.severity() >= v1::WARNING || (v.kind() == "release" && !v.passed());
}

}  // namespace

std::vector<std::pair<std::string, std::string>> step_labels(const StepIdentity& identity) {
  std::vector<std::pair<std::string, std::string>> labels = {
      {"slurm_job_id", std::to_string(identity.job_id)},
      {"slurm_step_id", identity.step_id},
      {"slurm_user", identity.user}};
  if (!identity.cluster.empty()) labels.emplace_back("slurm_cluster", identity.cluster);
  return labels;
}

StartOutcome start_guard(const PluginConfig& config, const StepRequest& request,
                         const StepIdentity& identity) {
  std::optional<Client> client;
  try {
    client.emplace(client_options(config));
  } catch (const ClientError& e) {
    return without_daemon(config, e.what());
  }
  const std::string job = !request.job.empty()         ? request.job
                          : !identity.job_name.empty() ? identity.job_name
                                                       : "slurm-" + std::to_string(identity.job_id);
  std::string reservation;
  StartOutcome out;
  try {
    if (request.wants_admission()) {
      AdmitOptions admit{.job = job,
                         .estimate_bytes = request.estimate_bytes,
                         .model_bytes = request.estimate_bytes > 0 ? 0 : request.model_bytes,
                         .plan = request.plan.empty() && request.estimate_bytes == 0
                                     ? config.default_plan
                                     : request.plan,
                         .hosts = request.hosts,
                         .pid = identity.pid,
                         .scope = request.scope};
      const v1::AdmitReply admitted = client->admit(admit);
      if (!admitted.admitted()) {
        out.decision = Decision::kRefused;
        out.lines.push_back("ramguard: step refused by ramguardd: " + admission_terms(admitted));
        return out;
      }
      reservation = admitted.reservation_id();
    }
    v1::Request call;
    v1::RunStartRequest& start = *call.mutable_run_start();
    start.set_pid(identity.pid);
    start.set_job(job);
    for (const auto& [key, value] : step_labels(identity)) (*start.mutable_labels())[key] = value;
    start.set_model_bytes(request.model_bytes);
    start.set_declared_rounds(request.rounds);
    start.set_hosts(request.hosts);
    start.set_reservation_id(reservation);
    start.set_end_on_exit(true);  // the task's exit status decides how the run ends
    start.set_scope(request.scope);
    const v1::RunStartReply started = client->call(std::move(call)).run_start();
    out.decision = Decision::kGuarded;
    out.run_id = started.run_id();
    out.socket_path = client->socket_path();
    return out;
  } catch (const ClientError& e) {
    release_quietly(*client, reservation);
    if (unreachable(e)) return without_daemon(config, e.what());
    // The daemon answered no (an unknown plan, a bad scope): the user's request to fix.
    out.decision = Decision::kRefused;
    out.lines.push_back(std::string("ramguard: step refused: ") + e.what());
    return out;
  }
}

std::vector<std::string> finish_guard(const PluginConfig& config, const std::string& run_id,
                                      int wait_status) {
  std::vector<std::string> lines;
  try {
    Client client(client_options(config));
    const bool clean = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
    if (clean) {
      try {
        Run(client, run_id).end();
      } catch (const ClientError& e) {
        // Already ended by its process's exit (the daemon saw it first), or by the client.
        if (e.kind() != ClientError::Kind::kServer) throw;
      }
    }
    const auto deadline = Clock::now() + config.verdict_wait;
    v1::RunStatus run;
    for (;;) {
      const v1::ReportReply report = client.report(run_id);
      run = report.run();
      if (decided(run) || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    lines.push_back("ramguard: run " + run_id + " (" + run.job() + ") " + run.state() + ", peak " +
                    units::format_bytes(static_cast<double>(run.peak_bytes())) + ", " +
                    std::to_string(run.verdicts_size()) + " verdicts");
    for (const v1::Verdict& v : run.verdicts()) {
      if (!worth_a_line(v)) continue;
      lines.push_back("ramguard: " + v1::Severity_Name(v.severity()) + " " + v.kind() + ": " +
                      v.summary());
    }
  } catch (const ClientError& e) {
    lines.push_back("ramguard: warning: could not collect the verdicts of run " + run_id + ": " +
                    e.what());
  }
  return lines;
}

}  // namespace ramguard::slurm
