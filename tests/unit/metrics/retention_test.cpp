// A finished run's series go away after the retention period, and only its job's series.
#include <gtest/gtest.h>

#include "common/clock.hpp"
#include "metrics/exporter.hpp"
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
    n += key.find("job=\"" + job + "\"") != std::string::npos;
  return n;
}

TEST(MetricsRetention, RetiredJobSeriesAreRemovedAfterTheRetentionPeriod) {
  auto started = MetricsExporter::start("127.0.0.1:0");
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  exporter.set_retention(std::chrono::minutes(10));
  testkit::populate(exporter);
  const std::string other = MetricsExporter::job_for_pid(4242);
  const std::size_t vit_series = series_with_job(scrape(exporter), "vit-h");
  ASSERT_GE(vit_series, 20u);

  FakeClock clock;
  exporter.retire_job("vit-h", clock.now());
  clock.advance(std::chrono::minutes(9));
  EXPECT_EQ(exporter.sweep(clock.now()), 0u);
  EXPECT_EQ(series_with_job(scrape(exporter), "vit-h"), vit_series);

  clock.advance(std::chrono::minutes(1));
  EXPECT_EQ(exporter.sweep(clock.now()), 1u);
  const auto after = scrape(exporter);
  EXPECT_EQ(series_with_job(after, "vit-h"), 0u);
  EXPECT_FALSE(exporter.has_job("vit-h"));
  // Other jobs and global series stay.
  EXPECT_EQ(sample(after, "ramguard_target_rss_bytes", {{"job", other}}), 9.6e9);
  EXPECT_EQ(sample(after, "ramguard_budget_bytes"), 16e9);
  // The job can come back with a new run, starting afresh.
  exporter.observe_peak("vit-h", 1000, true);
  EXPECT_EQ(sample(scrape(exporter), "ramguard_target_peak_bytes", {{"job", "vit-h"}}), 1000);
}

TEST(MetricsRetention, ANewRunOfTheSameJobCancelsTheRetirement) {
  auto started = MetricsExporter::start("127.0.0.1:0");
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  exporter.set_retention(std::chrono::seconds(60));
  FakeClock clock;
  exporter.observe_boundary("j", 1, 100, 90);
  exporter.retire_job("j", clock.now());
  clock.advance(std::chrono::seconds(30));
  exporter.observe_boundary("j", 1, 200, 190);  // the next run of the job started
  clock.advance(std::chrono::seconds(60));
  EXPECT_EQ(exporter.sweep(clock.now()), 0u);
  EXPECT_EQ(sample(scrape(exporter), "ramguard_boundary_rss_bytes", {{"job", "j"}}), 200);
}

TEST(MetricsRetention, SweepingUnknownOrActiveJobsRemovesNothing) {
  auto started = MetricsExporter::start("127.0.0.1:0");
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  FakeClock clock;
  exporter.observe_gap("active", "a->b", 1.5);
  exporter.retire_job("never-seen", clock.now());
  clock.advance(std::chrono::hours(24));
  EXPECT_EQ(exporter.sweep(clock.now()), 0u);
  EXPECT_TRUE(exporter.has_job("active"));
  EXPECT_EQ(
      sample(scrape(exporter), "ramguard_phase_gap_seconds", {{"job", "active"}, {"gap", "a->b"}}),
      1.5);
}

}  // namespace
}  // namespace ramguard
