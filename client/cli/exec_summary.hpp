#pragma once
// The summary `ramguard exec` prints when its command has ended: how it ended, its peak, the
// worst verdict and the release, so a user learns what happened without opening the report.
// Pure: the caller gathers the facts (wait4, the run's end reply or report).

#include <cstdint>
#include <optional>
#include <string>

#include "ramguard.pb.h"

namespace ramguard::cli {

struct ExecOutcome {
  std::string run_id;
  std::string command;         // argv[0] of CMD
  int exit_code = 0;           // as exec exits: the code, or 128+N when killed by signal N
  int signal_number = 0;       // N when killed by a signal, else 0
  double elapsed_seconds = 0;  // fork to wait
  // The child's high-water mark from wait4 (ru_maxrss), 0 when unknown. It covers the whole
  // life of CMD, including what the daemon could not read because CMD ended first.
  std::uint64_t ru_maxrss_bytes = 0;
  // The run as the daemon reports it after the end; empty when it could not be fetched.
  std::optional<v1::RunStatus> run;
};

// Lines for stderr, each starting "ramguard: ".
std::string exec_summary_text(const ExecOutcome& outcome, bool binary_units);

}  // namespace ramguard::cli
