// A finished run's series go away after the retention period, and only its job's series.
#include <gtest/gtest.h>

#include "common/clock.hpp"
#include "metrics/exporter.hpp"
#include "metrics/target_series.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard {
namespace {

using testkit::sample;

std::map<std::string, double> scrape(const MetricsExporter& exporter) {
  auto response = testkit::http_get(exporter.port());
  EXPECT_TRUE(response.ok());
  return response.ok() ? testkit::parse_samples(response->body) : std::map<std::string, double>{};
}

std::size_t series_with_job(const std::map<std::string, double>& samples, const std::string& job) {
  std::size_t n = 0;
  for (const auto& [key, value] : samples)
    n += key.find("ramguard_job=\"" + job + "\"") != std::string::npos;
  return n;
}

std::map<std::string, std::string> of(const TargetRef& t) {
  return {{"ramguard_job", std::string(t.job)}, {"run_id", std::string(t.run_id)}};
}

TEST(MetricsRetention, RetiredJobSeriesAreRemovedAfterTheRetentionPeriod) {
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  exporter.table()->set_retention(std::chrono::minutes(10));
  testkit::populate(exporter);
  const TargetRef vit = testkit::vit_run();
  const TargetRef other = testkit::watched_pid();
  const std::size_t vit_series = series_with_job(scrape(exporter), "vit-h");
  ASSERT_GE(vit_series, 20u);

  FakeClock clock;
  exporter.targets()->retire_target(vit, clock.now());
  // Sampling stopped: no current reading is claimed any more; the rest stays.
  const std::size_t retained = series_with_job(scrape(exporter), "vit-h");
  EXPECT_LT(retained, vit_series);
  EXPECT_FALSE(sample(scrape(exporter), "ramguard_target_rss_bytes", of(vit)));
  clock.advance(std::chrono::minutes(9));
  EXPECT_EQ(exporter.table()->sweep(clock.now()), 0u);
  EXPECT_EQ(series_with_job(scrape(exporter), "vit-h"), retained);

  clock.advance(std::chrono::minutes(1));
  EXPECT_EQ(exporter.table()->sweep(clock.now()), 2u);  // the run, and its job's admission series
  const auto after = scrape(exporter);
  EXPECT_EQ(series_with_job(after, "vit-h"), 0u);
  EXPECT_FALSE(exporter.table()->has_target(vit.run_id));
  // Other targets and global series stay.
  EXPECT_EQ(sample(after, "ramguard_target_rss_bytes", of(other)), 9.6e9);
  EXPECT_EQ(sample(after, "ramguard_budget_bytes"), 16e9);
  // The job comes back with a new run, starting afresh.
  const TargetRef next{"vit-h", "run-vit-2"};
  exporter.targets()->observe_peak(next, 1000, true);
  EXPECT_EQ(sample(scrape(exporter), "ramguard_target_peak_bytes", of(next)), 1000);
}

TEST(MetricsRetention, ANewRunOfTheSameJobIsItsOwnTargetAndKeepsItsSeries) {
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  exporter.table()->set_retention(std::chrono::seconds(60));
  FakeClock clock;
  const TargetRef first{"j", "run-1"}, second{"j", "run-2"};
  exporter.targets()->observe_boundary(first, testkit::settled_boundary(1, 100, 90, 90));
  exporter.targets()->retire_target(first, clock.now());
  clock.advance(std::chrono::seconds(30));
  exporter.targets()->observe_boundary(
      second, testkit::settled_boundary(1, 200, 190, 190));  // the next run of the job started
  clock.advance(std::chrono::seconds(30));
  EXPECT_EQ(exporter.table()->sweep(clock.now()), 1u);  // the first run only
  const auto s = scrape(exporter);
  EXPECT_FALSE(sample(s, "ramguard_boundary_rss_bytes", of(first)));
  EXPECT_EQ(sample(s, "ramguard_boundary_rss_bytes", of(second)), 200);
}

TEST(MetricsRetention, TargetsAreBoundedAndTheOldestRetiredGoFirst) {
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  FakeClock clock;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < kDefaultMaxTargets + 10; ++i)
    ids.push_back("run-" + std::to_string(i));
  for (std::size_t i = 0; i < kDefaultMaxTargets; ++i) {
    exporter.targets()->observe_gap(TargetRef{"j", ids[i]}, "a->b", 1.0);
    if (i < 20) exporter.targets()->retire_target(TargetRef{"j", ids[i]}, clock.now());
    clock.advance(std::chrono::seconds(1));
  }
  for (std::size_t i = kDefaultMaxTargets; i < kDefaultMaxTargets + 10; ++i) {
    exporter.targets()->observe_gap(TargetRef{"j", ids[i]}, "a->b", 1.0);
  }
  EXPECT_FALSE(exporter.table()->has_target(ids[0]));  // retired first, dropped first
  EXPECT_FALSE(exporter.table()->has_target(ids[9]));
  EXPECT_TRUE(exporter.table()->has_target(ids[10]));  // retired later: still inside the bound
  EXPECT_TRUE(exporter.table()->has_target(ids[kDefaultMaxTargets + 9]));
  EXPECT_TRUE(exporter.table()->has_target(ids[100]));  // live targets are never dropped
}

TEST(MetricsRetention, LiveTargetsPastTheBoundAreCountedAsFoldedUntilTheyRetire) {
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  exporter.table()->set_max_targets(4);
  FakeClock clock;
  for (int i = 0; i < 7; ++i) {
    const std::string id = "run-" + std::to_string(i);  // TargetRef only views it
    const TargetRef t{"j", id};
    exporter.targets()->observe_gap(t, "a->b", 1.0);
    exporter.targets()->observe_gap(t, "a->b", 2.0);  // a folded target seen again counts once
  }
  auto s = scrape(exporter);
  EXPECT_EQ(sample(s, "ramguard_metrics_max_targets", {}), 4);
  EXPECT_EQ(sample(s, "ramguard_metrics_targets_folded", {}), 3);
  // run-0..run-3 have series of their own; run-4..run-6 share one set labelled "other".
  ASSERT_GT(series_with_job(s, "other"), 0u);
  EXPECT_EQ(series_with_job(s, "j"), 4 * series_with_job(s, "other"));
  EXPECT_FALSE(exporter.table()->has_target("run-5"));
  exporter.targets()->retire_target(TargetRef{"j", "run-5"}, clock.now());
  s = scrape(exporter);
  EXPECT_EQ(sample(s, "ramguard_metrics_targets_folded", {}), 2);
}

TEST(MetricsRetention, SweepingUnknownOrActiveJobsRemovesNothing) {
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  FakeClock clock;
  const TargetRef active{"active", "run-active"};
  exporter.targets()->observe_gap(active, "a->b", 1.5);
  exporter.targets()->retire_target(TargetRef{"never-seen", "run-never"}, clock.now());
  clock.advance(std::chrono::hours(24));
  EXPECT_EQ(exporter.table()->sweep(clock.now()), 0u);
  EXPECT_TRUE(exporter.table()->has_target(active.run_id));
  auto labels = of(active);
  labels["gap"] = "a->b";
  EXPECT_EQ(sample(scrape(exporter), "ramguard_phase_gap_seconds", labels), 1.5);
}

}  // namespace
}  // namespace ramguard
