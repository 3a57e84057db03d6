#include "runs/params_from_config.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "verdicts/params.hpp"

namespace ramguard {
namespace {

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

MarkEdge mark_edge(PhaseEdge::Edge e) {
  return e == PhaseEdge::Edge::kBegin ? MarkEdge::kBegin : MarkEdge::kEnd;
}

}  // namespace

RunParams run_params(const Config& c) {
  RunParams p;
  DetectorParams& d = p.detectors;
  d.budget_bytes = c.budget_bytes;
  p.budget_from_cgroup = c.budget_auto;
  p.max_active_runs_per_user = c.admission.max_active_runs_per_user;
  d.growth_min_bytes = c.growth.min_bytes;
  d.plateau_band_bytes = plateau_band_for(c.growth.min_bytes);
  d.warmup_rounds = c.growth.warmup_rounds;
  d.fit_rounds = c.growth.fit_rounds;
  d.min_fit_r2 = c.growth.min_fit_r2;
  d.runaway_bytes_per_second = static_cast<double>(c.growth.runaway_bytes_per_second);
  d.runaway_min_seconds = seconds(c.growth.runaway_min_duration);
  d.release_slack_bytes = c.release.slack_bytes;
  d.release_grace_seconds = seconds(c.release.grace);
  d.growth_min_model_copies = c.growth.min_model_copies;
  d.runaway_model_copies_per_second = c.growth.runaway_model_copies_per_second;
  d.release_slack_model_copies = c.release.slack_model_copies;
  d.headroom_warn_fraction = c.headroom.warn_fraction;
  d.calibration_factor = c.admission.calibration_factor;
  d.phase_gaps.clear();
  for (const PhaseGapConfig& g : c.phase_gaps) {
    d.phase_gaps.push_back(
        {g.from.phase, mark_edge(g.from.edge), g.to.phase, mark_edge(g.to.edge), seconds(g.max)});
  }
  p.settle = c.growth.settle;
  p.max_runs = c.control.max_runs;
  p.max_marks_per_run = c.control.max_marks_per_run;
  p.series.recent_window = c.sampling.full_resolution_window;
  p.series.bucket_width = c.sampling.bucket;
  p.series.max_buckets = c.sampling.max_buckets;
  // The refresh rounds to whole samples, and happens at least every sample.
  p.peak_refresh_ticks = static_cast<std::uint32_t>(
      std::max<std::int64_t>(1, c.sampling.peak_refresh / c.sampling.interval));
  p.watch_peak_refresh_ticks = static_cast<std::uint32_t>(
      std::max<std::int64_t>(1, c.sampling.watch_peak_refresh / c.sampling.interval));
  p.ended_retention = c.metrics.run_retention;
  p.plans = c.plans;
  return p;
}

Status validate_for_daemon(const Config& config, std::string_view source_name) {
  if (Status valid = validate_config(config, source_name); !valid.ok()) return valid;
  if (Status usable = validate_params(run_params(config).detectors); !usable.ok()) {
    return Error{std::string(source_name) +
                 ": the detectors cannot use this configuration: " + usable.error().message};
  }
  return ok_status();
}

}  // namespace ramguard
