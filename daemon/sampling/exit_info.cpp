#include "sampling/exit_info.hpp"

#include <sys/wait.h>

#include <cstring>

namespace ramguard {
namespace {

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

ExitInfo exit_info_from_wait_status(int wait_status) {
  ExitInfo info;
  info.status_known = true;
  if (WIFSIGNALED(wait_status)) {
    info.signal = WTERMSIG(wait_status);
    info.core_dumped = WCOREDUMP(wait_status);
  } else {
    info.exit_code = WEXITSTATUS(wait_status);
  }
  return info;
}

void describe_exit(ExitInfo& info, pid_t pid, const OomEvidence& oom) {
  const bool rose = oom.before && oom.after && *oom.after > *oom.before;
  std::string text = "process " + std::to_string(pid);
  if (info.status_known) {
    info.oom_killed = rose && info.signal == SIGKILL;
    if (info.signal == 0) {
      text += " exited with code " + std::to_string(info.exit_code);
    } else {
      text += " was killed by " + signal_name(info.signal) + " (" + std::to_string(info.signal) +
              ")" + (info.core_dumped ? ", core dumped" : "");
    }
  } else {
    info.oom_killed = rose;
    text += " exited; its exit status is unknown (not a child of ramguardd)";
  }
  if (rose) {
    text += info.oom_killed ? "; OOM kill: " : "; an OOM kill in its cgroup: ";
    text += oom.cgroup_file + " oom_kill " + std::to_string(*oom.before) + " -> " +
            std::to_string(*oom.after);
  } else if (!oom.problem.empty()) {
    text += "; OOM kills cannot be told: " + oom.problem;
  }
  info.detail = std::move(text);
}

}  // namespace ramguard
