#pragma once
// What the admission desk needs from outside admission, as interfaces: the process a Load will
// run as, the machine's runs and caps, and the job's history. They are implemented where the
// reading happens (runs/admission_sources.*: /proc, cgroups and the registry; store/
// job_history.*: the ledger), so the decision itself is tested with plain fakes.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admission/admission.hpp"
#include "admission/calibration.hpp"
#include "model/scope.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// The process that will load: who owns it and what it holds now (RSS).
struct LoadProcess {
  std::uint32_t uid = 0;
  std::uint64_t rss_bytes = 0;
};

class LoadBaselines {
 public:
  virtual ~LoadBaselines() = default;
  // One read of PID. kNotFound when there is no such process.
  virtual Result<LoadProcess> process(pid_t pid) = 0;
  // The baseline of the run the Load will be, for the tree scope (the process and its
  // descendants; own_rss_bytes is the process's part) or the cgroup scope (its memory cgroup's
  // usage).
  // Errors name the problem (kInvalidArgument: no memory cgroup; kUnavailable: a failed read).
  virtual Result<std::uint64_t> scope_baseline(pid_t pid, Scope scope,
                                               std::uint64_t own_rss_bytes) = 0;
};

class MachineState {
 public:
  virtual ~MachineState() = default;
  // The active runs with what each holds now.
  virtual std::vector<RunHolding> holdings() = 0;
  // What the node (MemAvailable) and PID's memory cgroup allow now; pid 0: the node only.
  virtual AdmitCaps caps(pid_t pid) = 0;
};

class JobHistory {
 public:
  virtual ~JobHistory() = default;
  // The largest measured peak of the job's finished runs owned by one of `owners` (empty:
  // anyone's); nullopt when none is on record.
  virtual std::optional<MeasuredPeak> peak_on_record(const std::string& job,
                                                     const std::vector<std::uint32_t>& owners) = 0;
  // Called before an admission that may read the job's history; `ready` is called once, on the
  // caller's thread, when peak_on_record can answer. A source that asks another service
  // (fleet/) fetches here, bounded by its own timeout, so the event loop never waits on it; the
  // ledger answers at once.
  virtual void prepare(const std::string& /*job*/, std::function<void()> ready) { ready(); }
  // What the admission reason should add about the history ("" nothing), such as a fleet
  // source that could not be asked.
  virtual std::string note(const std::string& /*job*/) { return ""; }
};

}  // namespace ramguard
