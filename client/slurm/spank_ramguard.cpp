// spank_ramguard.so: the SPANK entry points (extern "C"). Slurm calls them in srun/sbatch
// (options), and in slurmstepd around each task:
//
//   slurm_spank_init            register the --ramguard-* options; read plugstack.conf's
//                               arguments; (slurmstepd) a pipe for the run id
//   slurm_spank_task_post_fork  slurmstepd, task forked but held before exec: for global task 0,
//                               admit and start the run on its PID; the decision goes to the
//                               task through the pipe
//   slurm_spank_task_init       in the task, just before exec: refused, it fails (the task exits
//                               1 and never execs: srun exits non-zero; failing post_fork instead
//                               would leave srun's exit status 0); admitted, RAMGUARD_RUN and
//                               RAMGUARD_SOCKET for a client inside to attach to
//   slurm_spank_task_exit       slurmstepd, task reaped: end the run, print its verdicts
//
// slurmstepd keeps one step per process, so the run id lives in a global between post_fork
// and task_exit. No exception crosses into Slurm; every daemon call has a timeout.
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "step_guard.hpp"
#include "step_options.hpp"

// spank.h declares the slurm_spank_* entry points outside its extern "C" block: included bare
// into C++ they would get C++ linkage (mangled names the plugin loader never finds).
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#define RAMGUARD_SPANK_EXPORT __attribute__((visibility("default")))

// SPANK_PLUGIN(ramguard, 1), spelled out: in C++ a namespace-scope const has internal linkage,
// so the loader would not find the symbols without `extern`.
extern "C" {
RAMGUARD_SPANK_EXPORT extern const char plugin_name[] = "ramguard";
RAMGUARD_SPANK_EXPORT extern const char plugin_type[] = "spank";
RAMGUARD_SPANK_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
RAMGUARD_SPANK_EXPORT extern const unsigned int spank_plugin_version = 1;
}

namespace {

using namespace ramguard::slurm;

constexpr std::size_t kOptionCount = std::size(kOptionNames);
constexpr std::uint32_t kCoordinatorTask = 0;

struct PluginState {
  PluginConfig config;
  std::optional<std::string> config_error;
  std::array<std::optional<std::string>, kOptionCount> given;  // --ramguard-* as typed
  std::string run_id;                                          // the step's run, when guarded
  int pipe_read = -1;  // run id from slurmstepd (post_fork) to task 0 (task_init)
  int pipe_write = -1;
};
PluginState g_state;

void print_error(const std::string& line) {
  slurm_error("%s", line.c_str());
}
void print_note(const std::string& line) {
  slurm_spank_log("%s", line.c_str());
}

int on_option(int val, const char* optarg, int /*remote*/) {
  if (val < 0 || static_cast<std::size_t>(val) >= kOptionCount) return -1;
  const std::string value = optarg != nullptr ? optarg : "";
  StepRequest check;  // validated where the user types it (srun refuses a bad value)
  const auto status = set_step_option(check, kOptionNames[val], value);
  if (!status) {
    print_error("ramguard: " + status.error().message);
    return -1;
  }
  g_state.given[static_cast<std::size_t>(val)] = value;
  return 0;
}

struct OptionText {
  std::string name, arginfo, usage;
};
std::array<OptionText, kOptionCount> option_texts() {
  return {
      {{"ramguard-estimate", "SIZE", "ramguard: memory the step's coordinator needs (16GB)"},
       {"ramguard-plan", "NAME", "ramguard: memory plan of the estimate (fedavg)"},
       {"ramguard-model", "SIZE", "ramguard: one model copy, estimated through the plan"},
       {"ramguard-hosts", "N", "ramguard: hosts of the training (plan terms per host)"},
       {"ramguard-rounds", "N", "ramguard: declared rounds of the run"},
       {"ramguard-scope", "SCOPE", "ramguard: what is measured: process, tree or cgroup"},
       {"ramguard-job", "NAME", "ramguard: job name of the run (default: the Slurm job name)"}}};
}

int register_options(spank_t sp) {
  static std::array<OptionText, kOptionCount> texts = option_texts();
  for (std::size_t i = 0; i < kOptionCount; ++i) {
    spank_option option{texts[i].name.data(),  texts[i].arginfo.data(),
                        texts[i].usage.data(), 1,
                        static_cast<int>(i),   on_option};
    if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
      print_error("ramguard: cannot register option --" + texts[i].name);
      return -1;
    }
  }
  return 0;
}

std::string job_env(spank_t sp, const char* name) {
  std::array<char, 1024> buffer{};
  if (spank_getenv(sp, name, buffer.data(), static_cast<int>(buffer.size())) != ESPANK_SUCCESS) {
    return {};
  }
  return buffer.data();
}

// Options typed on the command line win over SLURM_SPANK_RAMGUARD_* in the job's environment.
ramguard::Result<StepRequest> step_request(spank_t sp) {
  StepRequest request;
  for (std::size_t i = 0; i < kOptionCount; ++i) {
    std::string value =
        g_state.given[i].value_or(job_env(sp, option_env_name(kOptionNames[i]).c_str()));
    if (value.empty()) continue;
    const auto status = set_step_option(request, kOptionNames[i], value);
    if (!status) return status.error();
  }
  return request;
}

std::string user_name(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  std::array<char, 4096> buffer{};
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return std::to_string(uid);
}

std::string step_name(std::uint32_t step_id) {
  if (step_id == SLURM_BATCH_SCRIPT) return "batch";
  if (step_id == SLURM_INTERACTIVE_STEP) return "interactive";
  if (step_id == SLURM_EXTERN_CONT) return "extern";
  return std::to_string(step_id);
}

std::optional<StepIdentity> identity_of(spank_t sp) {
  std::uint32_t job_id = 0, step_id = 0;
  uid_t uid = 0;
  pid_t pid = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
    return std::nullopt;
  }
  return StepIdentity{.job_id = job_id,
                      .step_id = step_name(step_id),
                      .user = user_name(uid),
                      .cluster = job_env(sp, "SLURM_CLUSTER_NAME"),
                      .job_name = job_env(sp, "SLURM_JOB_NAME"),
                      .pid = static_cast<std::uint32_t>(pid)};
}

bool is_coordinator(spank_t sp) {
  std::uint32_t task = 1;
  return spank_get_item(sp, S_TASK_GLOBAL_ID, &task) == ESPANK_SUCCESS && task == kCoordinatorTask;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

constexpr char kRefusedMessage[] = "!refused\n";

// Hands the task its decision: "RUN_ID\nSOCKET\n" to attach, kRefusedMessage to fail, nothing
// when it runs unguarded.
void hand_over(const std::string& message) {
  if (g_state.pipe_write >= 0 && !message.empty()) {
    [[maybe_unused]] const ssize_t n = ::write(g_state.pipe_write, message.data(), message.size());
  }
  close_fd(g_state.pipe_write);
  close_fd(g_state.pipe_read);
}

int post_fork(spank_t sp) {
  if (!is_coordinator(sp)) return 0;
  if (g_state.config_error) {
    print_error("ramguard: step refused: plugstack.conf: " + *g_state.config_error);
    hand_over(kRefusedMessage);
    return 0;
  }
  const auto identity = identity_of(sp);
  if (!identity || identity->step_id == "extern") {
    hand_over({});
    return 0;
  }
  const auto request = step_request(sp);
  if (!request) {
    print_error("ramguard: step refused: " + request.error().message);
    hand_over(kRefusedMessage);
    return 0;
  }
  const StartOutcome outcome = start_guard(g_state.config, *request, *identity);
  const bool refused = outcome.decision == StartOutcome::Decision::kRefused;
  for (const std::string& line : outcome.lines) refused ? print_error(line) : print_note(line);
  if (refused) {
    hand_over(kRefusedMessage);
    return 0;
  }
  g_state.run_id = outcome.run_id;
  hand_over(outcome.run_id.empty() ? "" : outcome.run_id + "\n" + outcome.socket_path + "\n");
  return 0;
}

// In task 0, before exec: the run id and socket slurmstepd wrote (already there: the task is
// released only after every post_fork).
int task_init(spank_t sp) {
  close_fd(g_state.pipe_write);  // this process's copy; EOF comes once slurmstepd closes its own
  if (!is_coordinator(sp) || g_state.pipe_read < 0) {
    close_fd(g_state.pipe_read);
    return 0;
  }
  std::string message;
  std::array<char, 512> buffer{};
  pollfd ready{g_state.pipe_read, POLLIN, 0};
  while (message.size() < 4096 && ::poll(&ready, 1, 1000) > 0) {
    const ssize_t n = ::read(g_state.pipe_read, buffer.data(), buffer.size());
    if (n <= 0) break;
    message.append(buffer.data(), static_cast<std::size_t>(n));
  }
  close_fd(g_state.pipe_read);
  if (message == kRefusedMessage) return -1;  // the reason is on stderr already
  const auto newline = message.find('\n');
  if (newline == std::string::npos || newline == 0) return 0;  // unguarded
  const std::string run_id = message.substr(0, newline);
  std::string socket_path = message.substr(newline + 1);
  if (!socket_path.empty() && socket_path.back() == '\n') socket_path.pop_back();
  spank_setenv(sp, "RAMGUARD_RUN", run_id.c_str(), 1);
  if (!socket_path.empty()) spank_setenv(sp, "RAMGUARD_SOCKET", socket_path.c_str(), 1);
  // A client's start_run attaches to this run instead of starting a second one.
  spank_setenv(sp, "RAMGUARD_RUN_ATTACH", "slurm", 1);
  return 0;
}

int task_exit(spank_t sp) {
  if (!is_coordinator(sp) || g_state.run_id.empty()) return 0;
  int status = 0;
  if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS) status = 0;
  const std::string run_id = std::exchange(g_state.run_id, {});
  for (const std::string& line : finish_guard(g_state.config, run_id, status)) print_note(line);
  return 0;
}

template <typename F>
int guarded(const char* where, F&& f) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    slurm_error("ramguard: %s: %s", where, e.what());
  } catch (...) {
    slurm_error("ramguard: %s: unexpected failure", where);
  }
  return -1;
}

}  // namespace

extern "C" {

RAMGUARD_SPANK_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("init", [&] {
    // Options exist where users type them (srun, sbatch, salloc) and where they are read
    // (slurmstepd); slurmd and the prolog/epilog contexts have none to register.
    const spank_context_t context = spank_context();
    if (context != S_CTX_LOCAL && context != S_CTX_REMOTE && context != S_CTX_ALLOCATOR) return 0;
    if (register_options(sp) != 0) return -1;
    if (context != S_CTX_REMOTE) return 0;
    const auto config = parse_plugin_args(std::vector<std::string>(av, av + ac));
    if (config) {
      g_state.config = *config;
    } else {
      g_state.config_error = config.error().message;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      g_state.pipe_read = fds[0];
      g_state.pipe_write = fds[1];
    }
    return 0;
  });
}

RAMGUARD_SPANK_EXPORT int slurm_spank_task_post_fork(spank_t sp, int, char**) {
  return guarded("task_post_fork", [&] { return post_fork(sp); });
}

RAMGUARD_SPANK_EXPORT int slurm_spank_task_init(spank_t sp, int, char**) {
  // Only a refusal fails the task; a failure of the plugin itself here does not.
  int rc = 0;
  guarded("task_init", [&] { return rc = task_init(sp); });
  return rc;
}

RAMGUARD_SPANK_EXPORT int slurm_spank_task_exit(spank_t sp, int, char**) {
  guarded("task_exit", [&] { return task_exit(sp); });
  return 0;
}

RAMGUARD_SPANK_EXPORT int slurm_spank_exit(spank_t, int, char**) {
  close_fd(g_state.pipe_read);
  close_fd(g_state.pipe_write);
  return 0;
}

}  // extern "C"
