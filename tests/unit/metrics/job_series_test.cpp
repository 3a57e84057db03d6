// A job's history as JobSeries keeps it from the runs' ledgers and the ledger's seed.
#include "metrics/job_series.hpp"

#include <gtest/gtest.h>

#include "unit/metrics/scrape.hpp"

namespace ramguard {
namespace {

using testkit::sample;

const std::map<std::string, std::string> kFedavg = {{"ramguard_job", "fedavg"}, {"uid", "1000"}};

TEST(JobSeries, OnlyAnEndedRunWithAPeakAddsToItsJobsHistory) {
  testkit::Parts parts;
  RunLedger exited = testkit::ended_run("fedavg", 1000, 9'000'000'000, 5'000'000'000);
  exited.state = RunState::kExited;  // stopped early: its peak would under-estimate
  parts.jobs.observe_run(exited);
  RunLedger lost = exited;
  lost.state = RunState::kLost;
  parts.jobs.observe_run(lost);
  parts.jobs.observe_run(testkit::ended_run("fedavg", 1000, 0, 5'000'000'000));  // no peak
  EXPECT_FALSE(sample(parts.samples(), "ramguard_job_runs", kFedavg));
  parts.jobs.observe_run(testkit::ended_run("fedavg", 1000, 4'000'000'000, 5'000'000'000));
  const auto s = parts.samples();
  EXPECT_EQ(sample(s, "ramguard_job_runs", kFedavg), 1);
  EXPECT_EQ(sample(s, "ramguard_job_peak_bytes", kFedavg), 4e9);
  EXPECT_EQ(sample(s, "ramguard_job_peak_estimate_ratio", kFedavg), 0.8);
}

TEST(JobSeries, ASeededJobRetiresUnlessItsNextRunEndsWithinTheRetention) {
  FakeClock clock;
  for (const bool next_run : {false, true}) {
    testkit::Parts parts;
    parts.jobs.seed("fedavg", 1000, 7'000'000'000, 3, clock.now());
    EXPECT_EQ(sample(parts.samples(), "ramguard_job_runs", kFedavg), 3);
    if (next_run) {
      parts.jobs.observe_run(testkit::ended_run("fedavg", 1000, 8'000'000'000, 0));
    }
    clock.advance(kDefaultMetricsRetention + std::chrono::seconds(1));
    EXPECT_EQ(parts.table.sweep(clock.now()), next_run ? 0u : 1u);
    const auto s = parts.samples();
    if (next_run) {
      EXPECT_EQ(sample(s, "ramguard_job_runs", kFedavg), 4);
      EXPECT_EQ(sample(s, "ramguard_job_peak_bytes", kFedavg), 8e9);
    } else {
      EXPECT_FALSE(sample(s, "ramguard_job_runs", kFedavg));
    }
  }
}

}  // namespace
}  // namespace ramguard
