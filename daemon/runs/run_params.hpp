#pragma once
// The settings a run is judged and kept with; built from the configuration by main.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "model/plan.hpp"
#include "runs/sample_series.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

// Runs held in memory at most: the active ones (max_runs) and a quarter more (at least one)
// of ended ones; the per-run bound times this is the daemon's worst case (docs/measuring.md).
inline std::size_t runs_in_memory_limit(std::uint32_t max_runs) {
  return max_runs + std::max<std::size_t>(1, max_runs / 4);
}

struct RunParams {
  DetectorParams detectors;
  std::chrono::nanoseconds settle = std::chrono::seconds(3);  // boundary settle window
  std::uint32_t max_runs = 256;
  std::uint32_t max_marks_per_run = 100000;
  // How many of its newest marks and round boundaries a run holds in memory; older ones live
  // in the store (and in the ledger's summary), so a run's footprint does not grow with its
  // length. Trimmed in batches of a quarter, so at most 1.25x these are held. The counts are
  // what the per-run bound in docs/measuring.md is made of: a status lists 100 boundaries.
  std::size_t held_marks = 256;  // at least the 256 marks phase gaps are measured over
  std::size_t held_boundaries = 128;
  // The same for ended phases (open ones are always held) and verdicts: the phases it drops
  // are summarised by name (PhaseTotals), the worst verdict it drops is kept.
  std::size_t held_phases = 128;
  std::size_t held_verdicts = 64;
  // Distinct phase names one run may use (what metrics keep per label, too): what is kept per
  // name (totals, peaks, forecasts said) stays bounded. A coordinator has a handful; a name
  // per step is a client bug.
  std::size_t max_phase_names = 32;
  SeriesLimits series;
  std::chrono::nanoseconds ended_retention = std::chrono::minutes(15);
  // Ticks between status reads (VmHWM, ~6 us against ~1.5 us for statm) that bring the run's
  // exact peak up to date between marks (sampling.peak_refresh / sampling.interval).
  std::uint32_t peak_refresh_ticks = 1;
  // The same for watched PIDs (sampling.watch_peak_refresh / sampling.interval).
  std::uint32_t watch_peak_refresh_ticks = 1;
  std::uint32_t store_flush_ticks = 5;  // progress and a downsampled sample to the store
  // The configured memory plans: a run admitted with one is judged against what it expects.
  std::map<std::string, MemoryPlan> plans;
  // `budget: auto`: each run is judged against the smaller of the budget and the memory limit
  // over its process's cgroup, measured when the run starts (or resumes).
  bool budget_from_cgroup = false;
  // Fairness: how many active runs one UID other than root may have (0: no cap).
  std::uint32_t max_active_runs_per_user = 0;
  // Where a run with the `cgroup` scope finds its process's memory cgroup.
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";
};

}  // namespace ramguard
