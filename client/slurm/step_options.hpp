#pragma once
// What the plugin is told: its plugstack.conf arguments (the administrator's) and a step's
// --ramguard-* options or SLURM_SPANK_RAMGUARD_* variables (the user's). Parsing only, no Slurm
// and no socket, so the rules are testable without a cluster.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard::slurm {

struct PluginConfig {
  std::string socket_path{};   // empty: the daemon's default path (RAMGUARD_SOCKET of slurmd)
  std::string default_plan{};  // the plan of a step that gives a model size but no plan
  bool required = false;       // an unreachable daemon refuses the step (yes) or warns (no)
  // Per daemon call (connect, send, reply): slurmstepd never waits longer on one request.
  std::chrono::milliseconds timeout{3000};
  // How long the task's exit waits for the run's last verdicts (release) before summarising.
  std::chrono::milliseconds verdict_wait{3000};
};

// plugstack.conf arguments: socket=PATH default_plan=NAME required=yes|no timeout=DURATION
// verdict_wait=DURATION. An unknown or malformed argument is an error naming it.
Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args);

// One step's request, from --ramguard-* (which win) and SLURM_SPANK_RAMGUARD_* variables.
struct StepRequest {
  std::uint64_t estimate_bytes = 0;
  std::uint64_t model_bytes = 0;
  std::string plan{};
  std::uint32_t hosts = 0;
  std::uint32_t rounds = 0;
  std::string scope{};  // "process" (default), "tree" or "cgroup"
  std::string job{};    // empty: the Slurm job name

  // Admission needs something to estimate: a size, or a model for a plan.
  bool wants_admission() const { return estimate_bytes > 0 || model_bytes > 0; }
};

// The option names without the --ramguard- prefix, in the order they are registered.
inline constexpr std::string_view kOptionNames[] = {"estimate", "plan",  "model", "hosts",
                                                    "rounds",   "scope", "job"};

// Sets option `name` ("estimate", "plan", ...) from `value`; an error names the option, the
// value and what is allowed.
Status set_step_option(StepRequest& request, std::string_view name, std::string_view value);

// "SLURM_SPANK_RAMGUARD_ESTIMATE" for "estimate".
std::string option_env_name(std::string_view name);

}  // namespace ramguard::slurm
