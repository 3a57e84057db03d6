#include "control/queries.hpp"

#include <algorithm>

#include "control/census_convert.hpp"
#include "control/convert.hpp"
#include "ramguard/base/verdict_rank.hpp"
#include "store/store.hpp"
#include "verdicts/phase_gap.hpp"

namespace ramguard::control {

void add_gaps(const RunLedger& ledger, const DetectorParams& params, v1::RunStatus& out,
              std::size_t max_gaps) {
  const auto gaps = measure_phase_gaps(ledger.marks, params).gaps;
  const std::size_t left_out = gaps.size() - std::min(gaps.size(), max_gaps);
  if (left_out > 0) out.set_earlier_gaps(static_cast<std::uint32_t>(left_out));
  for (std::size_t i = left_out; i < gaps.size(); ++i) {
    const PhaseGap& gap = gaps[i];
    auto* g = out.add_gaps();
    g->set_rule(gap.rule);
    g->set_round(gap.round);
    g->set_seconds(gap.seconds);
    g->set_max_seconds(gap.max_seconds);
    g->set_over(gap.over);
  }
}

namespace {

// A run in memory holds its newest marks, boundaries, phases and verdicts; `stored` (the
// store's copy, consumed) has the older ones.
RunLedger with_stored_history(const RunLedger& held, Result<RunLedger> stored) {
  RunLedger out = held;
  if (!stored) return out;  // the report says what memory holds (and the earlier_* counts)
  // Filtered in place: a run at its marks bound has 100,000 of them, and a second copy would
  // double what a report costs the daemon while it is built.
  const std::uint64_t first_seq = held.marks.empty() ? UINT64_MAX : held.marks.front().seq;
  std::vector<MarkRecord>& marks = stored->marks;
  std::erase_if(marks, [&](const MarkRecord& m) { return m.seq >= first_seq; });
  marks.insert(marks.end(), held.marks.begin(), held.marks.end());
  const std::uint32_t first_round =
      held.boundaries.empty() ? UINT32_MAX : held.boundaries.front().round;
  std::vector<BoundaryRecord>& boundaries = stored->boundaries;
  std::erase_if(boundaries, [&](const BoundaryRecord& b) { return b.round >= first_round; });
  boundaries.insert(boundaries.end(), held.boundaries.begin(), held.boundaries.end());
  out.marks = std::move(marks);
  out.boundaries = std::move(boundaries);
  out.earlier_marks = held.mark_count() - out.marks.size();
  out.earlier_boundaries = {};
  if (out.boundaries.size() < held.boundary_count()) {  // the store lacks some: say so
    out.earlier_boundaries.count = held.boundary_count() - out.boundaries.size();
  }
  // Phases: the stored ones the run no longer holds (by name and begin), then the held ones
  // (their open phases' peaks are newer than the store's), in begin order.
  if (held.earlier_phases > 0) {
    std::vector<PhaseRecord>& phases = stored->phases;
    std::erase_if(phases, [&](const PhaseRecord& p) {
      return std::any_of(held.phases.begin(), held.phases.end(), [&](const PhaseRecord& h) {
        return h.begin.monotonic == p.begin.monotonic && h.phase == p.phase;
      });
    });
    phases.insert(phases.end(), held.phases.begin(), held.phases.end());
    std::stable_sort(phases.begin(), phases.end(), [](const auto& a, const auto& b) {
      return a.begin.monotonic < b.begin.monotonic;
    });
    out.phases = std::move(phases);
    out.earlier_phases = held.phase_count() - std::min(held.phase_count(), out.phases.size());
    out.earlier_phase_totals.clear();  // the count alone says what the store lacked
  }
  // Verdicts: the store has every one the run raised (each written as it was raised).
  if (held.earlier_verdicts > 0 &&
      stored->verdicts.size() >= held.earlier_verdicts + held.verdicts.size()) {
    out.verdicts = std::move(stored->verdicts);
    out.earlier_verdicts = 0;
    out.worst_earlier_verdict.reset();
  }
  return out;
}

bool trimmed(const RunLedger& held) {
  return held.earlier_marks > 0 || held.earlier_boundaries.count > 0 || held.earlier_phases > 0 ||
         held.earlier_verdicts > 0;
}

// A run the store must answer for (not in memory) or complete (held without its oldest
// records); nullopt: memory answers.
std::optional<StoredRead> stored_read(const RunRegistry& registry, const std::string& run_id) {
  if (run_id.empty()) return std::nullopt;
  const RunMachine* run = registry.find(run_id);
  if (run == nullptr) return StoredRead{};
  if (!trimmed(run->ledger())) return std::nullopt;
  StoredRead read;
  read.held = run->ledger();
  return read;
}

Error unreadable(const Error& e) {
  return Error{e.message, is_unknown_run(e) ? ErrorKind::kNotFound : ErrorKind::kUnavailable};
}

void add_samples(const std::vector<ProgressSample>& samples, v1::ReportReply& out) {
  for (const ProgressSample& p : samples) {
    auto* s = out.add_samples();
    s->set_at_unix_ms(p.at_unix_ms);
    s->set_rss_bytes(p.rss_bytes);
    s->set_min_rss_bytes(p.min_rss_bytes);
    s->set_max_rss_bytes(p.max_rss_bytes);
    s->set_anon_bytes(p.anon_bytes);
    s->set_file_bytes(p.file_bytes);
  }
}

}  // namespace

Result<RunLedger> find_ledger(const RunRegistry& registry, Store* store, const std::string& run_id,
                              bool complete) {
  if (run_id.empty()) return Error{"a run id is required"};
  if (const RunMachine* run = registry.find(run_id)) {
    const RunLedger& held = run->ledger();
    if (complete && trimmed(held) && store != nullptr) {
      return with_stored_history(held, store->load_run(held.info.run_id));
    }
    return held;
  }
  if (store == nullptr) {
    return Error{"unknown run id '" + run_id + "' (the ledger database is unavailable)",
                 ErrorKind::kNotFound};
  }
  auto loaded = store->load_run(run_id);
  if (!loaded) return unreadable(loaded.error());
  return loaded;
}

std::vector<CensusRecord> run_censuses(Store* store, const RunLedger& ledger) {
  if (store != nullptr) {
    auto stored = store->load_censuses(ledger.info.run_id);
    if (stored && stored->size() >= ledger.censuses.size()) return std::move(*stored);
  }
  return ledger.censuses;
}

void add_top_holder(const std::vector<CensusRecord>& censuses, v1::CompareRow& out) {
  if (censuses.empty() || censuses.back().groups.empty()) return;
  const CensusGroup& top = censuses.back().groups.front();
  out.set_top_holder(top.reachable ? top.holder : top.holder + " (reference cycle)");
  out.set_top_holder_bytes(top.bytes);
}

void fill_report(const RunRegistry& registry, Store* store, const RunLedger& ledger,
                 bool include_samples, v1::ReportReply& out) {
  to_proto(ledger, *out.mutable_run(), kReportLimits);
  add_gaps(ledger, registry.params().detectors, *out.mutable_run(), kReportLimits.gaps);
  for (const CensusRecord& c : run_censuses(store, ledger)) {
    to_proto(c, *out.mutable_run()->add_censuses());
  }
  if (!include_samples) return;
  if (const RunMachine* run = registry.find(ledger.info.run_id)) {
    add_held_samples(*run, out);
    return;
  }
  if (store == nullptr) return;
  if (auto samples = store->load_samples(ledger.info.run_id)) add_samples(*samples, out);
}

void add_held_samples(const RunMachine& run, v1::ReportReply& out) {
  for (const SeriesPoint& p : run.samples().points()) {
    auto* s = out.add_samples();
    s->set_at_unix_ms(unix_ms(p.last));
    s->set_rss_bytes(p.rss_last_bytes);
    s->set_min_rss_bytes(p.rss_min_bytes);
    s->set_max_rss_bytes(p.rss_max_bytes);
    s->set_anon_bytes(p.anon_last_bytes);
    s->set_file_bytes(p.file_last_bytes);
  }
}

void fill_compare_row(const RunLedger& ledger, const DetectorParams& params, v1::CompareRow& out) {
  out.set_run_id(ledger.info.run_id);
  out.set_job(ledger.info.job);
  for (const auto& [k, v] : ledger.info.labels) (*out.mutable_labels())[k] = v;
  out.set_peak_bytes(ledger.peak_bytes);
  if (ledger.earlier_boundaries.count > 0) {
    out.set_first_floor_bytes(ledger.earlier_boundaries.first_floor_bytes);
    if (!ledger.boundaries.empty()) out.set_last_floor_bytes(ledger.boundaries.back().floor_bytes);
  } else if (!ledger.boundaries.empty()) {
    out.set_first_floor_bytes(ledger.boundaries.front().floor_bytes);
    out.set_last_floor_bytes(ledger.boundaries.back().floor_bytes);
  }
  // After completion: the last reading taken after the run ended (the release check keeps
  // sampling until it decides).
  if (ledger.state == RunState::kEnded) out.set_after_completion_bytes(ledger.last.rss_bytes);
  for (const Verdict& v : ledger.verdicts) to_proto(v, ledger.info.run_id, *out.add_verdicts());
  // The order every worst verdict follows (ramguard/base/verdict_rank.hpp); the latest among
  // equals.
  const auto worst =
      worst_verdict(ledger.verdicts.begin(), ledger.verdicts.end(), [](const Verdict& v) {
        return VerdictFacts{v.kind, severity_name(v.severity), v.passed, v.cleared};
      });
  if (worst != ledger.verdicts.end()) {
    out.set_worst_verdict(worst->kind + (worst->passed ? std::string(" (passed)") : ""));
  }
  out.set_worst_gap_seconds(measure_phase_gaps(ledger.marks, params).worst_seconds);
  if (ledger.info.estimate_bytes > 0) {
    out.set_estimate_ratio(static_cast<double>(ledger.peak_bytes) /
                           static_cast<double>(ledger.info.estimate_bytes));
  }
}

std::optional<StoredReads> plan_stored_reads(const RunRegistry& registry, Store* store,
                                             const v1::Request& request) {
  if (store == nullptr) return std::nullopt;
  StoredReads reads;
  if (request.has_report()) {
    const v1::ReportRequest& in = request.report();
    auto read = stored_read(registry, in.run_id());
    if (!read) return std::nullopt;
    read->samples = !read->held && in.include_samples();
    reads.runs.emplace(in.run_id(), std::move(*read));
    return reads;
  }
  if (!request.has_compare()) return std::nullopt;
  const v1::CompareRequest& in = request.compare();
  reads.compare = true;
  std::vector<std::string> ids(in.run_ids().begin(), in.run_ids().end());
  if (!in.labels().empty()) {
    // The same query the comparison makes; who may read which run is checked then.
    std::map<std::string, std::string> labels(in.labels().begin(), in.labels().end());
    if (auto found = store->find_runs_by_labels(labels, 100)) {
      for (const RunSummary& s : *found) ids.push_back(s.info.run_id);
    }
  }
  if (ids.size() > 200) return std::nullopt;  // the comparison refuses it
  for (const std::string& id : ids) {
    if (reads.runs.contains(id)) continue;
    if (auto read = stored_read(registry, id)) reads.runs.emplace(id, std::move(*read));
  }
  if (reads.runs.empty()) return std::nullopt;
  return reads;
}

void read_stored(LedgerQueries& ledger, const DetectorParams& params, StoredReads& reads) {
  for (auto& [run_id, read] : reads.runs) {
    Result<RunLedger> run = Error{""};
    if (read.held) {
      run = with_stored_history(*read.held, ledger.load_run(run_id));
      read.held.reset();
    } else {
      run = ledger.load_run(run_id);
    }
    if (!run) {
      read.status = unreadable(run.error());
      continue;
    }
    read.info = run->info;
    if (reads.compare) {
      fill_compare_row(*run, params, read.row);
      continue;
    }
    to_proto(*run, *read.report.mutable_run(), kReportLimits);
    add_gaps(*run, params, *read.report.mutable_run(), kReportLimits.gaps);
    if (read.samples) {
      if (auto samples = ledger.load_samples(run_id)) add_samples(*samples, read.report);
    }
  }
}

}  // namespace ramguard::control
