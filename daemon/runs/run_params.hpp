#pragma once
// The settings a run is judged and kept with; built from the configuration by main.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "model/plan.hpp"
#include "runs/sample_series.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

struct RunParams {
  DetectorParams detectors;
  std::chrono::nanoseconds settle = std::chrono::seconds(3);  // boundary settle window
  std::uint32_t max_runs = 256;
  std::uint32_t max_marks_per_run = 100000;
  // How many of its newest marks and round boundaries a run holds in memory; older ones live
  // in the store (and in the ledger's summary), so a run's footprint does not grow with its
  // length. Trimmed in batches of a quarter, so at most 1.25x these are held.
  std::size_t held_marks = 512;  // at least the 256 marks phase gaps are measured over
  std::size_t held_boundaries = 256;
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
