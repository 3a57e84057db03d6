// A target's series as TargetMetrics keeps them: the warnings' one reset, and the records it
// takes (a phase, a round boundary) read as the run machine writes them.
#include "metrics/target_metrics.hpp"

#include <gtest/gtest.h>

#include "unit/metrics/scrape.hpp"

namespace ramguard {
namespace {

using testkit::sample;

const TargetRef kRun{"vit-h", "run-1"};

std::map<std::string, std::string> of(const std::string& kind) {
  return {{"ramguard_job", "vit-h"}, {"run_id", "run-1"}, {"kind", kind}};
}

// Every warning kind raised and held, as the detectors report them.
void raise_every_warning(TargetMetrics& targets) {
  for (const std::string& kind : TargetMetrics::warning_kinds()) {
    Verdict v;
    v.kind = kind;
    v.severity = Severity::kWarning;
    v.passed = false;
    targets.observe_verdict(kRun, v);
  }
}

// Each kind's ramguard_verdict_active: present (not merely missing) and equal to `value`.
void expect_every_warning(const testkit::Parts& parts, double value, const char* when) {
  const auto s = parts.samples();
  for (const std::string& kind : TargetMetrics::warning_kinds()) {
    EXPECT_EQ(sample(s, "ramguard_verdict_active", of(kind)), value) << kind << " " << when;
  }
}

TEST(TargetMetrics, WarningsGoToZeroAtRunEndAtExitAndWhenWatchedAnew) {
  {
    testkit::Parts parts;
    raise_every_warning(parts.targets);
    expect_every_warning(parts, 1, "raised");
    parts.targets.run_finished(kRun);
    expect_every_warning(parts, 0, "after the run ended");
    raise_every_warning(parts.targets);  // an ended run's warning no longer holds
    expect_every_warning(parts, 0, "raised after the run ended");
  }
  {
    testkit::Parts parts;
    raise_every_warning(parts.targets);
    parts.targets.set_target_up(kRun, false, "exited");
    expect_every_warning(parts, 0, "after the process exited");
  }
  {
    testkit::Parts parts;
    raise_every_warning(parts.targets);
    parts.targets.set_target_up(kRun, false, "exited");
    parts.targets.set_target_up(kRun, true, "");  // the same id watched again: afresh
    expect_every_warning(parts, 0, "when watched anew");
    raise_every_warning(parts.targets);
    expect_every_warning(parts, 1, "raised when watched anew");
  }
}

TEST(TargetMetrics, APhaseIsExportedOnceClosedWithItsDurationFromTheRecord) {
  testkit::Parts parts;
  PhaseRecord phase = testkit::closed_phase("aggregation", 9'600'000'000, 6.75);
  const auto end = phase.end;
  phase.end.reset();
  parts.targets.observe_phase(kRun, phase);
  const std::map<std::string, std::string> labels = {
      {"ramguard_job", "vit-h"}, {"run_id", "run-1"}, {"phase", "aggregation"}};
  EXPECT_FALSE(sample(parts.samples(), "ramguard_phase_peak_bytes", labels));
  phase.end = end;
  parts.targets.observe_phase(kRun, phase);
  const auto s = parts.samples();
  EXPECT_EQ(sample(s, "ramguard_phase_peak_bytes", labels), 9.6e9);
  EXPECT_EQ(sample(s, "ramguard_phase_duration_seconds", labels), 6.75);
}

TEST(TargetMetrics, ABoundaryAtItsMarkHasTheMarksRssAsItsFloorUntilSettled) {
  testkit::Parts parts;
  // As the run machine records a round end: floor = the mark's RSS, not yet settled.
  BoundaryRecord boundary =
      testkit::settled_boundary(4, 6'500'000'000, 6'500'000'000, 6'000'000'000);
  boundary.settled = false;
  parts.targets.observe_boundary(kRun, boundary);
  const std::map<std::string, std::string> labels = {{"ramguard_job", "vit-h"},
                                                     {"run_id", "run-1"}};
  auto s = parts.samples();
  EXPECT_EQ(sample(s, "ramguard_boundary_round", labels), 4);
  EXPECT_EQ(sample(s, "ramguard_boundary_floor_bytes", labels), 6.5e9);
  EXPECT_EQ(sample(s, "ramguard_boundary_counted_floor_bytes", labels), 6e9);
  EXPECT_FALSE(sample(s, "ramguard_boundary_allocator_live_bytes", labels));
  // Settled 0.4 GB lower: the counted floor drops with it.
  boundary.floor_bytes = 6'100'000'000;
  boundary.settled = true;
  parts.targets.observe_boundary(kRun, boundary);
  s = parts.samples();
  EXPECT_EQ(sample(s, "ramguard_boundary_floor_bytes", labels), 6.1e9);
  EXPECT_EQ(sample(s, "ramguard_boundary_counted_floor_bytes", labels), 5.6e9);
}

}  // namespace
}  // namespace ramguard
