// exec: admit, start CMD under a run on its PID, wait, end the run, print a summary (how CMD
// ended, its peak, the worst verdict, the release), exit with CMD's status.
//
// The child is forked first and held at a pipe until the run has started, so the run's baseline
// is taken before CMD does anything and RAMGUARD_RUN can be handed to it.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include "allocator_env.hpp"
#include "commands.hpp"
#include "exec_summary.hpp"
#include "output.hpp"
#include "ramguard/base/protocol.hpp"

namespace ramguard::cli {
namespace {

volatile sig_atomic_t g_child_pid = 0;

void forward_signal(int signal_number) {
  if (g_child_pid > 0) ::kill(static_cast<pid_t>(g_child_pid), signal_number);
}

// In the child: wait for the run id, export it, exec. Never returns.
[[noreturn]] void child_main(int gate_fd, const std::string& socket_path,
                             const Environment& environment,
                             const std::vector<std::string>& command) {
  std::string run_id;
  char buffer[256];
  for (;;) {
    const ssize_t n = ::read(gate_fd, buffer, sizeof buffer);
    if (n > 0) {
      run_id.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(gate_fd);
  if (run_id.empty()) ::_exit(125);  // the parent could not start the run; CMD never runs
  ::setenv(protocol::kRunEnv, run_id.c_str(), 1);
  ::setenv(protocol::kSocketEnv, socket_path.c_str(), 1);
  for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int error = errno;
  const std::string message =
      "ramguard exec: cannot run '" + command[0] + "': " + std::strerror(error) + "\n";
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, message.data(), message.size());
  ::_exit(error == ENOENT ? 127 : 126);
}

struct ChildEnd {
  int exit_code = 1;
  int signal_number = 0;
  std::uint64_t max_rss_bytes = 0;  // ru_maxrss, the child's high-water mark (kernel: KiB)
};

ChildEnd wait_for_child(pid_t child) {
  int status = 0;
  struct rusage usage {};
  ChildEnd end;
  while (::wait4(child, &status, 0, &usage) < 0) {
    if (errno != EINTR) return end;
  }
  end.max_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  if (WIFEXITED(status)) end.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    end.signal_number = WTERMSIG(status);
    end.exit_code = 128 + end.signal_number;
  }
  return end;
}

// SIGTERM/SIGHUP go on to the child; SIGINT/SIGQUIT come from the terminal to the child's
// process group already, so ramguard ignores them and keeps guarding until the child exits.
struct SignalForwarding {
  struct sigaction old_term {
  }, old_hup{}, old_int{}, old_quit{};
  explicit SignalForwarding(pid_t child) {
    g_child_pid = child;
    struct sigaction forward {};
    forward.sa_handler = forward_signal;
    sigemptyset(&forward.sa_mask);
    forward.sa_flags = SA_RESTART;
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGTERM, &forward, &old_term);
    ::sigaction(SIGHUP, &forward, &old_hup);
    ::sigaction(SIGINT, &ignore, &old_int);
    ::sigaction(SIGQUIT, &ignore, &old_quit);
  }
  ~SignalForwarding() {
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    g_child_pid = 0;
  }
};

// The run ends with the child: a clean exit ends it normally even when the daemon sees the exit
// before our runEnd arrives; a failure or a signal ends it `exited`.
Run start_run_on_child(Client& client, pid_t child, const ExecArgs& a,
                       const std::string& reservation) {
  v1::Request request;
  v1::RunStartRequest& start = *request.mutable_run_start();
  start.set_pid(static_cast<std::uint32_t>(child));
  start.set_job(a.admit.job);
  for (const auto& [key, value] : a.labels) (*start.mutable_labels())[key] = value;
  start.set_model_bytes(a.admit.model_bytes);
  start.set_declared_rounds(a.rounds);
  start.set_hosts(a.admit.hosts);
  start.set_reservation_id(reservation);
  start.set_end_on_exit(true);
  start.set_scope(a.scope);
  start.set_cgroup_path(a.cgroup_path);
  v1::RunStartReply reply = client.call(std::move(request)).run_start();
  if (reply.run_id().empty()) {
    throw ClientError(ClientError::Kind::kProtocol, "the daemon's run start reply names no run id");
  }
  std::string run_id = reply.run_id();
  return Run(client, std::move(run_id), std::move(reply));
}

}  // namespace

std::vector<OptionSpec> exec_options() {
  std::vector<OptionSpec> options = admit_options();
  std::erase_if(options, [](const OptionSpec& o) { return o.name == "pid"; });
  options.push_back({"label", true, true});
  options.push_back({"rounds", true});
  options.push_back({"allocator", true});
  options.push_back({"cgroup", true});
  return options;
}

ExecArgs build_exec(const Scanned& s) {
  ExecArgs a;
  a.admit = admit_args(s, false);
  a.admission = s.has("estimate") || s.has("plan") || a.admit.use_calibrated;
  a.labels = label_options(s);
  a.rounds = u32_option(s, "rounds");
  if (const std::string* allocator = s.get("allocator")) {
    if (*allocator != "jemalloc" && *allocator != "glibc-tuned" && *allocator != "glibc") {
      throw UsageError{"ramguard exec --allocator '" + *allocator +
                       "' is not known; use jemalloc, glibc-tuned or glibc"};
    }
    a.allocator = *allocator;
    // The allocator is a label, so `ramguard compare --label job=...` shows them side by side.
    const auto given = a.labels.find("allocator");
    if (given != a.labels.end() && given->second != a.allocator) {
      throw UsageError{"ramguard exec: --label allocator=" + given->second +
                       " contradicts --allocator " + a.allocator};
    }
    a.labels["allocator"] = a.allocator;
  }
  a.scope = scope_option(s);
  a.cgroup_path = text_option(s, "cgroup");
  a.command = s.rest;
  if (a.command.empty())
    throw UsageError{"ramguard exec needs a command: ramguard exec [OPTIONS] -- CMD ARGS..."};
  return a;
}

int cmd_exec(const GlobalOptions& g, const ExecArgs& a, std::ostream&, std::ostream& err) {
  // Checked before anything is admitted: a missing allocator must not cost a reservation.
  const auto environment = allocator_environment(a.allocator, std::getenv("LD_PRELOAD"));
  if (!environment.ok()) {
    err << "ramguard exec: " << environment.error().message << "\n";
    return kExitFailure;
  }
  Client client = connect(g);
  std::string reservation;
  if (a.admission) {
    const v1::AdmitReply admitted = client.admit(to_admit_options(a.admit));
    if (!admitted.admitted()) {
      err << admit_text(admitted, g.binary_units) << "ramguard exec: not starting '" << a.command[0]
          << "'\n";
      return kExitRefused;
    }
    reservation = admitted.reservation_id();
  }

  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) {
    err << "ramguard exec: cannot create a pipe: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  err.flush();
  std::fflush(nullptr);  // the child must not write buffered output a second time
  const pid_t child = ::fork();
  if (child < 0) {
    err << "ramguard exec: cannot fork: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  if (child == 0) {
    ::close(gate[1]);
    child_main(gate[0], client.socket_path(), *environment, a.command);
  }
  ::close(gate[0]);

  std::optional<Run> run;
  try {
    run.emplace(start_run_on_child(client, child, a, reservation));
  } catch (const ClientError&) {
    ::close(gate[1]);  // the child sees no run id and exits without running CMD
    (void)wait_for_child(child);
    if (!reservation.empty()) {
      try {
        client.release(reservation);
      } catch (const ClientError&) {
        // The reservation expires with its lease anyway.
      }
    }
    throw;
  }
  const std::string& run_id = run->id();
  [[maybe_unused]] const ssize_t written = ::write(gate[1], run_id.data(), run_id.size());
  ::close(gate[1]);
  err << "ramguard: run " << run_id << " on pid " << child << ": " << a.command[0] << "\n";

  ChildEnd ended;
  ExecOutcome outcome;
  outcome.run_id = run_id;
  outcome.command = a.command[0];
  {
    const auto started = std::chrono::steady_clock::now();
    SignalForwarding forwarding(child);
    ended = wait_for_child(child);
    outcome.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  outcome.exit_code = ended.exit_code;
  outcome.signal_number = ended.signal_number;
  outcome.ru_maxrss_bytes = ended.max_rss_bytes;
  try {
    // The child's own high-water mark: a process too short for any reading still has its peak.
    RunEndFacts facts;
    facts.exit_max_rss_bytes = ended.max_rss_bytes;
    run->end(facts);
  } catch (const ClientError& e) {
    // The daemon ends the run by itself when CMD exits (end_on_exit), often before this request:
    // that is the normal case, not worth a word.
    if (e.code() != v1::Error::FAILED_PRECONDITION && e.code() != v1::Error::NOT_FOUND) {
      err << "ramguard: warning: could not end run " << run_id << ": " << e.what() << "\n";
    }
  }
  // The run as the daemon judged it: its verdicts, its peak and, when the grace has passed, its
  // release. A daemon that cannot answer leaves the summary with what wait4 told us.
  try {
    outcome.run = client.report(run_id).run();
  } catch (const ClientError&) {
    outcome.run.reset();
  }
  err << exec_summary_text(outcome, g.binary_units);
  return outcome.exit_code;
}

}  // namespace ramguard::cli
