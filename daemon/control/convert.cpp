#include "control/convert.hpp"

#include <limits>
#include <map>

#include "ramguard/base/verdict_rank.hpp"

namespace ramguard::control {

void to_proto(const MemoryReading& reading, v1::Reading& out) {
  out.set_at_unix_ms(unix_ms(reading.at));
  out.set_complete(reading.source == ReadingSource::kMark);
  out.set_rss_bytes(reading.rss_bytes);
  out.set_anon_bytes(reading.anon_bytes);
  out.set_file_bytes(reading.file_bytes);
  out.set_shmem_bytes(reading.shmem_bytes);
  out.set_swap_bytes(reading.swap_bytes);
  out.set_hwm_bytes(reading.hwm_bytes);
  out.set_pss_bytes(reading.pss_bytes);
}

static v1::Severity severity_to_proto(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return v1::INFO;
    case Severity::kWarning:
      return v1::WARNING;
    case Severity::kCritical:
      return v1::CRITICAL;
  }
  return v1::INFO;
}

void to_proto(const Verdict& verdict, const std::string& run_id, v1::Verdict& out) {
  out.set_kind(verdict.kind);
  out.set_severity(severity_to_proto(verdict.severity));
  out.set_passed(verdict.passed);
  out.set_run_id(run_id);
  out.set_round(verdict.round);
  out.set_phase(verdict.phase);
  out.set_summary(verdict.summary);
  for (const auto& [name, value] : verdict.figures) (*out.mutable_figures())[name] = value;
  out.set_at_unix_ms(unix_ms(verdict.at));
  out.set_cleared(verdict.cleared);
  out.set_update(verdict.update);
}

namespace {

// What a run listing and a full status share: who, what state, and the headline figures.
template <typename RunHead>
void head_to_proto(const RunHead& run, v1::RunStatus& out) {
  const RunInfo& info = run.info;
  out.set_run_id(info.run_id);
  out.set_job(info.job);
  for (const auto& [k, v] : info.labels) (*out.mutable_labels())[k] = v;
  out.set_pid(static_cast<std::uint32_t>(info.target.pid));
  out.set_state(run_state_name(run.state));
  to_proto(run.baseline, *out.mutable_baseline());
  to_proto(run.last, *out.mutable_last());
  out.set_peak_bytes(run.peak_bytes);
  out.set_peak_exact(run.peak_exact);
  out.set_model_bytes(info.model_bytes);
  out.set_declared_rounds(info.declared_rounds);
  out.set_hosts(info.hosts);
  out.set_estimate_bytes(info.estimate_bytes);
  out.set_scope(scope_name(info.scope));
  if (!info.cgroup_dir.empty()) out.set_cgroup_dir(info.cgroup_dir);
  // A claimed reservation is held until the run ends.
  if (run.state == RunState::kActive) out.set_reservation_bytes(info.estimate_bytes);
  out.set_started_unix_ms(unix_ms(run.started));
  if (run.ended) out.set_ended_unix_ms(unix_ms(*run.ended));
}

}  // namespace

void to_proto(const RunSummary& summary, v1::RunStatus& out) {
  head_to_proto(summary, out);
  out.set_round(summary.rounds);
  if (summary.worst_verdict) {
    to_proto(*summary.worst_verdict, summary.info.run_id, *out.add_verdicts());
  }
}

void to_proto(const RunLedger& ledger, v1::RunStatus& out, const ListLimits& limits) {
  const RunInfo& info = ledger.info;
  head_to_proto(ledger, out);
  std::uint32_t round = 0;
  // Phases the ledger no longer holds and those past the limit: a count and totals by name.
  const std::size_t phases_left_out =
      ledger.phases.size() - std::min(ledger.phases.size(), limits.phases);
  std::map<std::string, PhaseTotals> earlier_totals = ledger.earlier_phase_totals;
  const std::uint64_t earlier_phases = ledger.earlier_phases + phases_left_out;
  if (earlier_phases > 0) {
    out.set_earlier_phases(static_cast<std::uint32_t>(
        std::min<std::uint64_t>(earlier_phases, std::numeric_limits<std::uint32_t>::max())));
  }
  for (std::size_t i = 0; i < ledger.phases.size(); ++i) {
    const PhaseRecord& p = ledger.phases[i];
    if (!p.end && ledger.state == RunState::kActive) out.set_current_phase(p.phase);
    if (i < phases_left_out) {
      earlier_totals[p.phase].add(p);
      continue;
    }
    auto* phase = out.add_phases();
    phase->set_phase(p.phase);
    phase->set_round(p.round);
    phase->set_begin_seconds(seconds_between(ledger.started, p.begin));
    if (p.end) phase->set_duration_seconds(seconds_between(p.begin, *p.end));
    phase->set_peak_bytes(p.peak_bytes);
    phase->set_peak_exact(p.peak_exact);
    phase->set_plan_bytes(p.plan_bytes);
    phase->set_allocated_bytes(p.allocated_bytes);
  }
  for (const auto& [name, totals] : earlier_totals) {
    auto* t = out.add_earlier_phase_totals();
    t->set_phase(name);
    t->set_count(totals.count);
    t->set_max_peak_bytes(totals.max_peak_bytes);
    t->set_total_seconds(totals.total_seconds);
  }
  // Boundaries the ledger no longer holds and those past the limit: one summary.
  BoundarySummary earlier = ledger.earlier_boundaries;
  const std::size_t boundaries_left_out =
      ledger.boundaries.size() - std::min(ledger.boundaries.size(), limits.boundaries);
  for (std::size_t i = 0; i < boundaries_left_out; ++i) earlier.add(ledger.boundaries[i]);
  if (earlier.count > 0) {
    auto* s = out.mutable_earlier_boundaries();
    s->set_count(earlier.count);
    s->set_first_round(earlier.first_round);
    s->set_last_round(earlier.last_round);
    s->set_first_floor_bytes(earlier.first_floor_bytes);
    s->set_min_floor_bytes(earlier.min_floor_bytes);
    s->set_max_floor_bytes(earlier.max_floor_bytes);
    round = earlier.last_round;
  }
  for (std::size_t i = boundaries_left_out; i < ledger.boundaries.size(); ++i) {
    const BoundaryRecord& b = ledger.boundaries[i];
    auto* boundary = out.add_boundaries();
    boundary->set_round(b.round);
    to_proto(b.reading, *boundary->mutable_reading());
    boundary->set_floor_bytes(b.floor_bytes);
    if (b.gc) {
      auto* gc = boundary->mutable_gc();
      gc->set_rss_before_bytes(b.gc->rss_before_bytes);
      gc->set_rss_after_bytes(b.gc->rss_after_bytes);
      gc->set_collected_objects(b.gc->collected_objects);
      gc->set_duration_seconds(b.gc->duration_seconds);
    }
    if (b.allocator) {
      auto* alloc = boundary->mutable_allocator();
      alloc->set_allocated_bytes(b.allocator->allocated_bytes);
      alloc->set_active_bytes(b.allocator->active_bytes);
      alloc->set_resident_bytes(b.allocator->resident_bytes);
      alloc->set_retained_bytes(b.allocator->retained_bytes);
    }
    round = std::max(round, b.round);
  }
  out.set_round(round);
  // Verdicts the ledger no longer holds and those past the limit: a count and the worst.
  const std::size_t verdicts_left_out =
      ledger.verdicts.size() - std::min(ledger.verdicts.size(), limits.verdicts);
  if (const std::uint64_t earlier_verdicts = ledger.earlier_verdicts + verdicts_left_out;
      earlier_verdicts > 0) {
    out.set_earlier_verdicts(earlier_verdicts);
  }
  const auto facts = [](const Verdict& v) {
    return VerdictFacts{v.kind, severity_name(v.severity), v.passed, v.cleared};
  };
  const auto left_out_end = ledger.verdicts.begin() + static_cast<long>(verdicts_left_out);
  const auto worst_left_out = worst_verdict(ledger.verdicts.begin(), left_out_end, facts);
  const Verdict* worst = ledger.worst_earlier_verdict ? &*ledger.worst_earlier_verdict : nullptr;
  if (worst_left_out != left_out_end &&
      (worst == nullptr || !worse_verdict(facts(*worst), facts(*worst_left_out)))) {
    worst = &*worst_left_out;
  }
  if (worst != nullptr) to_proto(*worst, info.run_id, *out.mutable_worst_earlier_verdict());
  for (auto it = left_out_end; it != ledger.verdicts.end(); ++it) {
    to_proto(*it, info.run_id, *out.add_verdicts());
  }
}

}  // namespace ramguard::control
