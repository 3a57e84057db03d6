#pragma once
// Admission's one service face. The control layer converts a request into an AdmitAsk and the
// caller it learned, and gets back the decision; everything between (the plan, the model size,
// the estimate and its source, the job's history, who may admit for which process, the
// baseline of the run's scope, the machine's runs and caps) is decided here. Claims go through
// Admission::claimable/claim, the one claim rule.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "admission/admission.hpp"
#include "admission/sources.hpp"
#include "model/access.hpp"
#include "model/plan.hpp"
#include "model/scope.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

struct AdmitAsk {
  std::string job;
  std::uint64_t estimate_bytes = 0;  // 0: not given
  std::string plan;                  // with a model: the plan's estimate
  std::uint64_t parameter_count = 0;
  double bytes_per_parameter = 0;
  std::uint64_t model_bytes = 0;
  std::uint32_t hosts = 0;
  pid_t pid = 0;  // the process that will load; 0: the caller
  bool use_calibrated = false;
  Scope scope = Scope::kProcess;  // what the run's baseline is
  std::string allocator;          // the loader's C allocator as its client reported it; "": unknown
};

struct DeskSettings {
  std::map<std::string, MemoryPlan> plans;
  bool use_calibrated = false;  // the configuration's default for every ask
  double calibration_factor = kDefaultCalibrationFactor;
  PeersRead peers_read = PeersRead::kOwn;
  // Whose finished runs calibrate an admission besides the reservation owner's own: a user's
  // run under another's job name must not set that job's estimate (admission.trusted_uids).
  std::vector<std::uint32_t> trusted_uids{0};
};

struct AdmitOutcome {
  Decision decision;
  pid_t pid = 0;                // whose baseline it is
  std::uint32_t owner_uid = 0;  // who may claim or release the reservation
  std::string reason;           // the decision's sentence and how the estimate came about
};

// Told of every admission the desk decides: the metrics count them (metrics/run_metrics.hpp).
class AdmissionObserver {
 public:
  virtual ~AdmissionObserver() = default;
  virtual void admission_decided(const AdmitAsk& ask, const AdmitOutcome& outcome) = 0;
};

class AdmissionDesk {
 public:
  AdmissionDesk(Admission& admission, LoadBaselines& baselines, MachineState& machine,
                DeskSettings settings);
  void set_settings(DeskSettings settings) { settings_ = std::move(settings); }
  void set_history(JobHistory* history) { history_ = history; }  // nullptr: no ledger
  void set_observer(AdmissionObserver* observer) { observer_ = observer; }

  // Errors (nothing reserved): an unknown plan naming the configured ones, a bad model size, no
  // estimate, no such process (kNotFound), another UID's process under peers_read own
  // (kPermissionDenied), a bad scope. A refusal is an outcome, not an error.
  Result<AdmitOutcome> admit(const AdmitAsk& ask, const Caller& caller);
  // Before admit: lets the job's history fetch what it needs (JobHistory::prepare); `ready` is
  // called once, at once when there is nothing to fetch.
  void prepare(const AdmitAsk& ask, std::function<void()> ready);

 private:
  Result<EstimateChoice> estimate(const AdmitAsk& ask, std::uint32_t owner_uid);
  bool may_calibrate(const AdmitAsk& ask) const;

  Admission& admission_;
  LoadBaselines& baselines_;
  MachineState& machine_;
  JobHistory* history_ = nullptr;
  AdmissionObserver* observer_ = nullptr;
  DeskSettings settings_;
};

}  // namespace ramguard
