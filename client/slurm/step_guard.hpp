#pragma once
// The plugin's conversations with ramguardd, one per moment of a step, each bounded by the
// configured per-call timeout: admit and start the run before the coordinator task execs, end
// it and collect its verdicts after the task exits. Nothing here knows Slurm: the SPANK entry
// points (spank_ramguard.cpp) gather the step's identity and print the lines returned.

#include <cstdint>
#include <string>
#include <vector>

#include "step_options.hpp"

namespace ramguard::slurm {

// Who the run is: the Slurm facts that become its labels and its job name.
struct StepIdentity {
  std::uint32_t job_id = 0;
  std::string step_id{};   // "0", "1", ..., "batch", "interactive"
  std::string user{};      // the job's user name (or UID when unknown)
  std::string cluster{};   // SLURM_CLUSTER_NAME
  std::string job_name{};  // SLURM_JOB_NAME
  std::uint32_t pid = 0;   // the coordinator task's PID
};

struct StartOutcome {
  enum class Decision { kGuarded, kUnguarded, kRefused };
  Decision decision = Decision::kUnguarded;
  std::string run_id{};            // when guarded
  std::string socket_path{};       // the daemon the run is on, for the task's environment
  std::vector<std::string> lines;  // for the user's stderr, each a complete sentence
};

// Admits the step (when the request names an estimate or a model) and starts a run on the
// task's PID that claims the reservation and ends with the process. A refusal carries the
// admission's reason; an unreachable daemon refuses when config.required, else the step runs
// unguarded with a warning.
StartOutcome start_guard(const PluginConfig& config, const StepRequest& request,
                         const StepIdentity& identity);

// After the task's exit (wait_status as waitpid gives it): ends the run when the exit was clean
// (a failure or a signal is the daemon's to judge: the run ends `exited`), waits up to
// config.verdict_wait for its release verdict, and returns one line for the run and one per
// warning or failure among its verdicts.
std::vector<std::string> finish_guard(const PluginConfig& config, const std::string& run_id,
                                      int wait_status);

// The labels a step's run carries.
std::vector<std::pair<std::string, std::string>> step_labels(const StepIdentity& identity);

}  // namespace ramguard::slurm
