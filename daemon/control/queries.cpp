#include "control/queries.hpp"

#include "common/verdict_rank.hpp"
#include "control/convert.hpp"
#include "store/store.hpp"
#include "verdicts/phase_gap.hpp"

namespace ramguard::control {

void add_gaps(const RunLedger& ledger, const DetectorParams& params, v1::RunStatus& out) {
  for (const PhaseGap& gap : measure_phase_gaps(ledger.marks, params).gaps) {
    auto* g = out.add_gaps();
    g->set_rule(gap.rule);
    g->set_round(gap.round);
    g->set_seconds(gap.seconds);
    g->set_max_seconds(gap.max_seconds);
    g->set_over(gap.over);
  }
}

Result<RunLedger> find_ledger(const RunRegistry& registry, Store* store,
                              const std::string& run_id) {
  if (run_id.empty()) return Error{"a run id is required"};
  if (const RunMachine* run = registry.find(run_id)) return run->ledger();
  if (store == nullptr) {
    return Error{"unknown run id '" + run_id + "' (the ledger database is unavailable)",
                 ErrorKind::kNotFound};
  }
  auto loaded = store->load_run(run_id);
  if (!loaded) {
    return Error{loaded.error().message,
                 is_unknown_run(loaded.error()) ? ErrorKind::kNotFound : ErrorKind::kUnavailable};
  }
  return loaded;
}

void fill_report(const RunRegistry& registry, Store* store, const RunLedger& ledger,
                 bool include_samples, v1::ReportReply& out) {
  to_proto(ledger, *out.mutable_run());
  add_gaps(ledger, registry.params().detectors, *out.mutable_run());
  if (!include_samples) return;
  if (const RunMachine* run = registry.find(ledger.info.run_id)) {
    for (const SeriesPoint& p : run->samples().points()) {
      auto* s = out.add_samples();
      s->set_at_unix_ms(unix_ms(p.last));
      s->set_rss_bytes(p.rss_last_bytes);
      s->set_min_rss_bytes(p.rss_min_bytes);
      s->set_max_rss_bytes(p.rss_max_bytes);
      s->set_anon_bytes(p.anon_last_bytes);
      s->set_file_bytes(p.file_last_bytes);
    }
    return;
  }
  if (store == nullptr) return;
  if (auto samples = store->load_samples(ledger.info.run_id)) {
    for (const StoredSample& p : *samples) {
      auto* s = out.add_samples();
      s->set_at_unix_ms(p.at_unix_ms);
      s->set_rss_bytes(p.rss_bytes);
      s->set_min_rss_bytes(p.min_rss_bytes);
      s->set_max_rss_bytes(p.max_rss_bytes);
      s->set_anon_bytes(p.anon_bytes);
      s->set_file_bytes(p.file_bytes);
    }
  }
}

void fill_compare_row(const RunLedger& ledger, const DetectorParams& params, v1::CompareRow& out) {
  out.set_run_id(ledger.info.run_id);
  out.set_job(ledger.info.job);
  for (const auto& [k, v] : ledger.info.labels) (*out.mutable_labels())[k] = v;
  out.set_peak_bytes(ledger.peak_bytes);
  if (!ledger.boundaries.empty()) {
    out.set_first_floor_bytes(ledger.boundaries.front().floor_bytes);
    out.set_last_floor_bytes(ledger.boundaries.back().floor_bytes);
  }
  // After completion: the last reading taken after the run ended (the release check keeps
  // sampling until it decides).
  if (ledger.state == RunState::kEnded) out.set_after_completion_bytes(ledger.last.rss_bytes);
  for (const Verdict& v : ledger.verdicts) to_proto(v, ledger.info.run_id, *out.add_verdicts());
  // The order every worst verdict follows (common/verdict_rank.hpp); the latest among equals.
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

}  // namespace ramguard::control
