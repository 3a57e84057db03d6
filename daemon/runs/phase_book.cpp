#include "runs/phase_book.hpp"

#include <algorithm>

#include "admission/estimator.hpp"
#include "admission/plan_phases.hpp"
#include "common/log.hpp"
#include "runs/held_room.hpp"

namespace ramguard {

bool PhaseBook::is_open(const std::string& phase) const {
  return std::any_of(open_.begin(), open_.end(),
                     [&](std::size_t i) { return ledger_.phases[i].phase == phase; });
}

Status PhaseBook::can_begin(const std::string& phase) const {
  const std::string& run_id = ledger_.info.run_id;
  if (is_open(phase)) {
    return Error{"phase '" + phase + "' is already open in run " + run_id,
                 ErrorKind::kFailedPrecondition};
  }
  if (names_.size() >= params_.max_phase_names && !names_.contains(phase)) {
    return Error{"run " + run_id + " already uses " + std::to_string(names_.size()) +
                     " phase names, the limit: phase '" + phase +
                     "' would be one more (name phases by what they do, not by step)",
                 ErrorKind::kResourceExhausted};
  }
  return ok_status();
}

Status PhaseBook::can_end(const std::string& phase) const {
  if (!is_open(phase)) {
    return Error{"phase '" + phase + "' ended without a begin (open phases: " + open_names() + ")",
                 ErrorKind::kFailedPrecondition};
  }
  return ok_status();
}

PhaseRecord& PhaseBook::begin(PhaseRecord phase) {
  names_.insert(phase.phase);
  ledger_.phases.push_back(std::move(phase));
  open_.push_back(ledger_.phases.size() - 1);
  return ledger_.phases.back();
}

PhaseRecord& PhaseBook::end(const std::string& name, Instant at) {
  auto open = std::find_if(open_.begin(), open_.end(),
                           [&](std::size_t i) { return ledger_.phases[i].phase == name; });
  PhaseRecord& phase = ledger_.phases[*open];
  phase.end = at;
  open_.erase(open);
  std::uint64_t& earlier = peaks_[phase.phase];
  earlier = std::max(earlier, phase.peak_bytes);
  return phase;
}

std::vector<const PhaseRecord*> PhaseBook::close_all(Instant at) {
  std::vector<const PhaseRecord*> closed;
  for (std::size_t index : open_) {
    ledger_.phases[index].end = at;
    closed.push_back(&ledger_.phases[index]);
  }
  open_.clear();
  return closed;
}

void PhaseBook::fold_peak(std::uint64_t peak_bytes) {
  for (std::size_t i : open_) {
    auto& phase = ledger_.phases[i];
    phase.peak_bytes = std::max(phase.peak_bytes, peak_bytes);
  }
}

std::string PhaseBook::open_names() const {
  std::string names;
  for (std::size_t i : open_) {
    names += (names.empty() ? "" : ", ") + ledger_.phases[i].phase;
  }
  return names.empty() ? "none" : names;
}

std::string PhaseBook::current() const {
  return open_.empty() ? std::string() : ledger_.phases[open_.back()].phase;
}

std::optional<PhaseYardstick> PhaseBook::yardstick(const std::string& phase) const {
  const RunInfo& info = ledger_.info;
  if (info.plan.empty() || info.model_bytes == 0) return std::nullopt;
  auto plan = params_.plans.find(info.plan);
  if (plan == params_.plans.end()) return std::nullopt;
  auto estimate = phase_estimate(plan->second, phase, info.model_bytes, info.hosts);
  if (!estimate) return std::nullopt;
  PhaseYardstick y;
  y.plan_live_bytes = estimate->bytes;
  y.plan_bytes = ledger_.baseline.counted_bytes() + estimate->bytes;
  std::uint64_t reserved = info.estimate_bytes;
  if (reserved == 0) {
    if (auto whole = estimate_from_plan(plan->second, info.model_bytes, info.hosts)) {
      reserved = whole->bytes;
    }
  }
  y.reserved_bytes = ledger_.baseline.counted_bytes() + reserved;
  if (auto peak = peaks_.find(phase); !phase.empty() && peak != peaks_.end()) {
    y.earlier_peak_bytes = peak->second;
  }
  return y;
}

std::string PhaseBook::plan_warning(const std::string& phase) {
  const RunInfo& info = ledger_.info;
  if (info.plan.empty() || !checked_names_.first(phase)) return {};
  auto plan = params_.plans.find(info.plan);
  if (plan == params_.plans.end()) return {};
  std::string warning = unplanned_phase_warning(plan->second, phase);
  if (!warning.empty()) {
    log::warning("run.phase_not_in_plan",
                 {{"run", info.run_id}, {"phase", phase}, {"plan", info.plan}});
  }
  return warning;
}

std::vector<Verdict> PhaseBook::forecasts(const std::string& phase, std::uint32_t round,
                                          const std::optional<PhaseRoom>& room,
                                          std::uint64_t counted_bytes, Instant now,
                                          const DetectorParams& detectors) {
  std::vector<Verdict> out;
  const auto planned = yardstick(phase);
  if (!planned) return out;
  const std::uint64_t model_bytes = ledger_.info.model_bytes;
  if (forecast_phases_.first(phase)) {
    if (auto v = forecast_phase(*planned, phase, round, model_bytes, now, detectors)) {
      out.push_back(std::move(*v));
    }
  }
  if (!room) return out;
  for (const RoomCap cap : {RoomCap::kCgroup, RoomCap::kNode}) {
    auto v = forecast_phase_room(*planned, cap, *room, counted_bytes, phase, round, model_bytes,
                                 now, detectors);
    if (v && room_forecasts_.first({phase, cap, v->kind})) out.push_back(std::move(*v));
  }
  return out;
}

bool PhaseBook::gap_first(std::size_t rule_index, const Instant& from_at) {
  return gaps_reported_.first({rule_index, static_cast<std::uint64_t>(from_at.monotonic.count())});
}

void PhaseBook::forget_gaps_before(const Instant& oldest) {
  const auto before = static_cast<std::uint64_t>(oldest.monotonic.count());
  gaps_reported_.forget_if([&](const GapKey& key) { return key.second < before; });
}

void PhaseBook::resumed(PhaseRecord phase) {
  names_.insert(phase.phase);
  if (phase.end) {
    std::uint64_t& earlier = peaks_[phase.phase];
    earlier = std::max(earlier, phase.peak_bytes);
  }
  ledger_.phases.push_back(std::move(phase));
  trim();
}

void PhaseBook::reopen() {
  open_.clear();
  for (std::size_t i = 0; i < ledger_.phases.size(); ++i) {
    if (!ledger_.phases[i].end) open_.push_back(i);
  }
}

// Drops the oldest ended phases past the held count into their names' totals; open phases
// stay whatever their age (an outer phase may span the run), and their indexes move with them.
void PhaseBook::trim(bool exact) {
  const std::size_t held = std::max<std::size_t>(params_.held_phases, 16);
  auto& phases = ledger_.phases;
  if (phases.size() > (exact ? held : held + held / 4)) {
    std::size_t drop = phases.size() - held;
    std::vector<PhaseRecord> kept;
    kept.reserve(held + held / 4 + 1);
    open_.clear();
    for (PhaseRecord& phase : phases) {
      if (drop > 0 && phase.end) {
        ledger_.earlier_phase_totals[phase.phase].add(phase);
        ++ledger_.earlier_phases;
        --drop;
        continue;
      }
      if (!phase.end) open_.push_back(kept.size());
      kept.push_back(std::move(phase));
    }
    phases = std::move(kept);
  }
  keep_room(phases, held + held / 4 + 1);
}

}  // namespace ramguard
