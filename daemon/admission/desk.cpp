#include "admission/desk.hpp"

#include <algorithm>
#include <utility>

#include "admission/estimator.hpp"

namespace ramguard {

AdmissionDesk::AdmissionDesk(Admission& admission, LoadBaselines& baselines, MachineState& machine,
                             DeskSettings settings)
    : admission_(admission),
      baselines_(baselines),
      machine_(machine),
      settings_(std::move(settings)) {}

// The history matters when calibration is asked for, or when nothing else gives an estimate.
bool AdmissionDesk::may_calibrate(const AdmitAsk& ask) const {
  if (history_ == nullptr || ask.job.empty()) return false;
  return ask.use_calibrated || settings_.use_calibrated ||
         (ask.estimate_bytes == 0 && ask.plan.empty());
}

void AdmissionDesk::prepare(const AdmitAsk& ask, std::function<void()> ready) {
  if (!may_calibrate(ask)) {
    ready();
    return;
  }
  history_->prepare(ask.job, std::move(ready));
}

Result<EstimateChoice> AdmissionDesk::estimate(const AdmitAsk& ask, std::uint32_t owner_uid) {
  EstimateInputs inputs;
  if (ask.estimate_bytes != 0) inputs.given_bytes = ask.estimate_bytes;
  if (!ask.plan.empty()) {
    auto plan = settings_.plans.find(ask.plan);
    if (plan == settings_.plans.end()) {
      std::string known;
      for (const auto& [name, p] : settings_.plans) known += (known.empty() ? "" : ", ") + name;
      return Error{"unknown plan '" + ask.plan +
                   "' (configured plans: " + (known.empty() ? "none" : known) + ")"};
    }
    auto model_bytes =
        model_bytes_from(ask.parameter_count, ask.bytes_per_parameter, ask.model_bytes);
    if (!model_bytes) return model_bytes.error();
    auto from_plan = estimate_from_plan(plan->second, *model_bytes, ask.hosts, ask.allocator);
    if (!from_plan) return from_plan.error();
    inputs.plan_estimate = *from_plan;
  }
  inputs.use_calibrated = ask.use_calibrated || settings_.use_calibrated;
  inputs.factor = settings_.calibration_factor;
  if (history_ != nullptr && !ask.job.empty()) {
    std::vector<std::uint32_t> owners = settings_.trusted_uids;
    if (std::find(owners.begin(), owners.end(), owner_uid) == owners.end()) {
      owners.push_back(owner_uid);
    }
    inputs.peak_on_record = history_->peak_on_record(ask.job, owners);
  }
  return choose_estimate(inputs);
}

Result<AdmitOutcome> AdmissionDesk::admit(const AdmitAsk& ask, const Caller& caller) {
  AdmitOutcome out;
  out.pid = ask.pid != 0 ? ask.pid : caller.pid;
  // The reservation belongs to the caller; root admitting for a PID gives it to that
  // process's owner, who can then claim it for its run.
  out.owner_uid = caller.uid;
  std::uint64_t baseline_bytes = 0;
  if (out.pid > 0) {
    auto process = baselines_.process(out.pid);
    if (!process) return process.error();
    if (!read_scope(caller, settings_.peers_read).covers(process->uid)) {
      // The baseline is that process's memory: under `own` another UID may not learn it.
      return Error{"uid " + std::to_string(caller.uid) + " may not admit with PID " +
                       std::to_string(out.pid) + ": it is owned by uid " +
                       std::to_string(process->uid) + " (control.peers_read is own)",
                   ErrorKind::kPermissionDenied};
    }
    if (caller.privileged && ask.pid != 0) out.owner_uid = process->uid;
    baseline_bytes = process->rss_bytes;
    if (ask.scope != Scope::kProcess) {
      auto scoped = baselines_.scope_baseline(out.pid, ask.scope, process->rss_bytes);
      if (!scoped) return scoped.error();
      baseline_bytes = *scoped;
    }
  }
  // Estimated once the owner is known: only its (and trusted users') history calibrates.
  auto choice = estimate(ask, out.owner_uid);
  if (!choice) return choice.error();
  const AdmitInput input{ask.job, choice->bytes, choice->source, baseline_bytes, out.owner_uid};
  out.decision = admission_.admit(input, machine_.holdings(), machine_.caps(out.pid));
  out.reason = choice->detail.empty() ? out.decision.reason
                                      : out.decision.reason + "; estimate: " + choice->detail;
  if (may_calibrate(ask)) {
    if (std::string note = history_->note(ask.job); !note.empty()) out.reason += "; " + note;
  }
  if (observer_ != nullptr) observer_->admission_decided(ask, out);
  return out;
}

}  // namespace ramguard
