#pragma once
// Thresholds of every detector, with the embedded defaults. runs/params_from_config maps the YAML
// configuration onto this struct; validate_params() rejects values that make no sense.

#include <cstdint>
#include <string>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard {

enum class MarkEdge { kBegin, kEnd };

inline const char* mark_edge_name(MarkEdge e) {
  return e == MarkEdge::kBegin ? "begin" : "end";
}

// "aggregation.end -> synchronization.begin <= 10s": the interval from a `from` mark to the
// next `to` mark, per round.
struct PhaseGapRule {
  std::string from_phase;
  MarkEdge from_edge = MarkEdge::kEnd;
  std::string to_phase;
  MarkEdge to_edge = MarkEdge::kBegin;
  double max_seconds = 10;
};

// "aggregation.end -> synchronization.begin"
std::string phase_gap_rule_name(const PhaseGapRule& rule);

struct DetectorParams {
  std::uint64_t budget_bytes = 16'000'000'000;
  // How verdict sentences name the budget ("the 16.00 GB budget"); a run judged against its
  // cgroup's limit says so ("budget (the run's cgroup limit)").
  std::string budget_name = "budget";

  // Between-round growth (see growth.hpp for the rule set).
  std::uint64_t growth_min_bytes = 512'000'000;
  std::uint32_t warmup_rounds = 1;
  std::uint32_t fit_rounds = 5;  // window of the leak fit; at least 4
  double min_fit_r2 = 0.8;
  std::uint64_t plateau_band_bytes = 256'000'000;  // floors within this band are "flat"
  std::uint32_t plateau_rounds = 3;                // that many flat floors make a plateau
  std::uint32_t projection_fit_rounds = 20;        // window of the budget projection fit

  // Within a round.
  double runaway_bytes_per_second = 200e6;
  double runaway_min_seconds = 10;

  // After the run.
  std::uint64_t release_slack_bytes = 1'000'000'000;
  double release_grace_seconds = 30;

  double headroom_warn_fraction = 0.9;
  double calibration_factor = 1.1;

  std::vector<PhaseGapRule> phase_gaps{
      {"aggregation", MarkEdge::kEnd, "synchronization", MarkEdge::kBegin, 10}};

  // Size thresholds in model copies (0: not set). For a run that declared its model size they
  // replace the byte figures above (resolve_model_copies); a run without one keeps the bytes.
  double growth_min_model_copies = 0;
  double runaway_model_copies_per_second = 0;
  double release_slack_model_copies = 0;
};

// Any threshold given in model copies?
bool uses_model_copies(const DetectorParams& params);

// The thresholds for a run whose model is model_bytes: every threshold set in model copies
// becomes bytes (copies x model_bytes, the growth step at least 1 byte) and the plateau band
// follows the growth step. model_bytes 0 (unknown) leaves the byte thresholds as they are.
DetectorParams resolve_model_copies(const DetectorParams& params, std::uint64_t model_bytes);

// The thresholds a run with model_bytes is judged by, in one line for its start reply, the log
// and --check-config: "growth 40 MB/round (0.2 model copies), runaway 160 MB/s (0.8 model
// copies/s) for 10 s, release slack 80 MB (0.4 model copies) within 30 s". A run without a
// model size is told that the byte thresholds apply and why.
std::string describe_thresholds(const DetectorParams& configured, std::uint64_t model_bytes);

// Floors within half the step threshold count as flat (512MB -> 256MB by default): the band
// must scale with growth.min_bytes, or a smaller threshold could never warn nor plateau.
inline std::uint64_t plateau_band_for(std::uint64_t growth_min_bytes) {
  return growth_min_bytes / 2;
}

// An error names the field, the value and what is allowed.
Status validate_params(const DetectorParams& params);

}  // namespace ramguard
