// The exporter scraped over HTTP, as Prometheus does: values, names, promtool's lint.
#include "metrics/exporter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "unit/metrics/scrape.hpp"

namespace ramguard {
namespace {

using testkit::sample;
using Labels = std::map<std::string, std::string>;

// The target labels of a series, plus `extra`.
Labels of(const TargetRef& target, Labels extra = {}) {
  extra["ramguard_job"] = std::string(target.job);
  extra["run_id"] = std::string(target.run_id);
  return extra;
}

const TargetRef kJ{"j", "run-j"};

std::unique_ptr<MetricsExporter> start_exporter() {
  auto exporter = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  EXPECT_TRUE(exporter.ok()) << (exporter.ok() ? "" : exporter.error().message);
  return exporter.ok() ? std::move(exporter).value() : nullptr;
}

std::string scrape(const MetricsExporter& exporter) {
  auto response = testkit::http_get(exporter.port());
  EXPECT_TRUE(response.ok()) << (response.ok() ? "" : response.error().message);
  if (!response.ok()) return {};
  EXPECT_EQ(response->status, 200);
  return response->body;
}

TEST(MetricsExporter, BindsAnEphemeralPortOnLoopback) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  EXPECT_GT(exporter->port(), 0);
  const std::string body = scrape(*exporter);
  EXPECT_NE(body.find("ramguard_build_info{version=\"" RAMGUARD_TEST_VERSION "\"} 1"),
            std::string::npos)
      << body;
}

TEST(MetricsExporter, ScrapeShowsObservedValuesUnderConventionalNames) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  testkit::populate(*exporter);
  const auto s = testkit::parse_samples(scrape(*exporter));
  const std::string pid_job = WatchList::job_for_pid(4242);
  EXPECT_EQ(pid_job, "pid-4242");
  const TargetRef vit = testkit::vit_run();
  const TargetRef pid = testkit::watched_pid();

  EXPECT_EQ(sample(s, "ramguard_budget_bytes"), 16e9);
  EXPECT_EQ(sample(s, "ramguard_budget_margin_bytes"), 5e8);
  EXPECT_EQ(sample(s, "ramguard_reserved_bytes"), 11.1e9);
  EXPECT_EQ(sample(s, "ramguard_runs_active"), 1);
  EXPECT_EQ(sample(s, "ramguard_store_available"), 1);
  for (const TargetRef& job : {vit, pid}) {
    EXPECT_EQ(sample(s, "ramguard_target_rss_bytes", of(job)), 9.6e9) << job.run_id;
    EXPECT_EQ(sample(s, "ramguard_target_memory_bytes", of(job, {{"kind", "anon"}})), 9e9);
    EXPECT_EQ(sample(s, "ramguard_target_memory_bytes", of(job, {{"kind", "file"}})), 5e8);
    EXPECT_EQ(sample(s, "ramguard_target_memory_bytes", of(job, {{"kind", "shmem"}})), 1e8);
    EXPECT_EQ(sample(s, "ramguard_target_swap_bytes", of(job)), 4096);
    // What the verdicts judge: anon + shmem + swap; page cache (file) is not in it.
    EXPECT_EQ(sample(s, "ramguard_target_counted_bytes", of(job)), 9e9 + 1e8 + 4096);
    EXPECT_EQ(sample(s, "ramguard_target_peak_bytes", of(job)), 9.6e9);
    EXPECT_EQ(sample(s, "ramguard_target_peak_exact", of(job)), 1);
    EXPECT_EQ(sample(s, "ramguard_target_up", of(job)), 1);
    EXPECT_EQ(sample(s, "ramguard_target_last_reading_timestamp_seconds", of(job)), 1.7e9);
  }
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(pid, {{"reason", "hwm_reset_denied"}})), 1);
  EXPECT_EQ(sample(s, "ramguard_target_read_seconds", of(vit)), 0.0125);
  EXPECT_EQ(sample(s, "ramguard_target_slow_reads_total", of(vit)), 2);
  EXPECT_EQ(sample(s, "ramguard_target_pss_read_seconds", of(vit)), 0.06);
  EXPECT_EQ(sample(s, "ramguard_target_read_seconds", of(pid)), 0.000003);
  EXPECT_EQ(sample(s, "ramguard_target_slow_reads_total", of(pid)), 0);
  EXPECT_FALSE(sample(s, "ramguard_target_pss_read_seconds", of(pid)));  // no PSS sum yet
  EXPECT_EQ(sample(s, "ramguard_phase_peak_bytes", of(vit, {{"phase", "aggregation"}})), 9.6e9);
  EXPECT_EQ(sample(s, "ramguard_phase_duration_seconds", of(vit, {{"phase", "aggregation"}})),
            6.75);
  EXPECT_EQ(sample(s, "ramguard_phase_duration_seconds", of(vit, {{"phase", "synchronization"}})),
            5.0);
  EXPECT_EQ(sample(s, "ramguard_boundary_round", of(vit)), 3);
  EXPECT_EQ(sample(s, "ramguard_boundary_rss_bytes", of(vit)), 6.5e9);
  EXPECT_EQ(sample(s, "ramguard_boundary_floor_bytes", of(vit)), 6.4e9);
  EXPECT_EQ(sample(s, "ramguard_boundary_counted_floor_bytes", of(vit)), 6.1e9);
  EXPECT_EQ(sample(s, "ramguard_boundary_allocator_live_bytes", of(vit)), 5e9);
  EXPECT_EQ(sample(s, "ramguard_boundary_allocator_free_bytes", of(vit)), 1.3e9);
  EXPECT_EQ(sample(s, "ramguard_target_scope_info", of(vit, {{"scope", "cgroup"}})), 1);
  EXPECT_EQ(sample(s, "ramguard_phase_gap_seconds",
                   of(vit, {{"gap", "aggregation.end->synchronization.begin"}})),
            5.0);
  EXPECT_EQ(sample(s, "ramguard_admissions_total",
                   Labels{{"ramguard_job", "vit-h"}, {"decision", "admitted"}}),
            1);
  EXPECT_EQ(sample(s, "ramguard_admissions_total",
                   Labels{{"ramguard_job", "vit-h"}, {"decision", "refused"}}),
            1);
  EXPECT_EQ(sample(s, "ramguard_admission_headroom_bytes", {{"ramguard_job", "vit-h"}}), -1.2e9);
  EXPECT_EQ(sample(s, "ramguard_verdicts_total",
                   of(vit, {{"kind", "growth_warning"}, {"severity", "warning"}})),
            1);
  EXPECT_EQ(sample(s, "ramguard_verdict_active", of(vit, {{"kind", "growth_warning"}})), 1);
  EXPECT_EQ(sample(s, "ramguard_verdict_active", of(vit, {{"kind", "leak"}})), 0);
  EXPECT_EQ(sample(s, "ramguard_sample_duration_seconds_count"), 2);
  EXPECT_NEAR(*sample(s, "ramguard_sample_duration_seconds_sum"), 4.4e-6, 1e-12);
}

// metrics.job_names: the job's name, a stable hash of it, or nothing, in every series that
// carries ramguard_job; the run_id and the values stay.
TEST(MetricsExporter, JobNamesCanBeHashedOrOmitted) {
  EXPECT_EQ(job_label("vit-h14", JobNames::kPlain), "vit-h14");
  EXPECT_EQ(job_label("vit-h14", JobNames::kOmit), "");
  const std::string hashed = job_label("vit-h14", JobNames::kHash);
  EXPECT_EQ(hashed.size(), 14u);
  EXPECT_EQ(hashed.rfind("h-", 0), 0u);
  EXPECT_EQ(hashed, job_label("vit-h14", JobNames::kHash));  // stable
  EXPECT_NE(hashed, job_label("vit-h16", JobNames::kHash));

  for (const JobNames mode : {JobNames::kHash, JobNames::kOmit}) {
    auto exporter = start_exporter();
    ASSERT_NE(exporter, nullptr);
    exporter->table()->set_job_names(mode);
    testkit::populate(*exporter);
    const std::string body = scrape(*exporter);
    const TargetRef vit = testkit::vit_run();
    EXPECT_EQ(body.find("ramguard_job=\"" + std::string(vit.job) + "\""), std::string::npos)
        << body;
    const std::string shown = job_label(vit.job, mode);
    EXPECT_NE(body.find("ramguard_job=\"" + shown + "\",run_id=\"" + std::string(vit.run_id)),
              std::string::npos)
        << body;
  }
}

TEST(MetricsExporter, PromtoolAcceptsTheScrapeWithoutWarnings) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  testkit::populate(*exporter);
  const std::string body = scrape(*exporter);
  ASSERT_NE(body.find("ramguard_target_rss_bytes"), std::string::npos);
  const auto check = testkit::promtool_check_metrics(body);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output, "") << "promtool printed warnings";
}

TEST(MetricsExporter, EveryFamilyHasHelpAndNoLabelGrowsWithRoundsOrPids) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  testkit::populate(*exporter);
  for (std::uint32_t round = 1; round <= 20; ++round) {
    exporter->targets()->observe_boundary(
        testkit::vit_run(), testkit::settled_boundary(round, 6'000'000'000 + round, 6'000'000'000,
                                                      5'900'000'000 + round));
  }
  const std::string body = scrape(*exporter);
  const auto s = testkit::parse_samples(body);
  EXPECT_EQ(sample(s, "ramguard_boundary_round", of(testkit::vit_run())), 20);
  EXPECT_EQ(body.find("round=\""), std::string::npos);
  EXPECT_EQ(body.find("pid=\""), std::string::npos);
  // Prometheus's own target label is left to the scrape: no honor_labels needed.
  EXPECT_EQ(body.find("{job=\""), std::string::npos);
  EXPECT_EQ(body.find(",job=\""), std::string::npos);
  std::size_t types = 0;
  for (std::size_t at = body.find("# TYPE ramguard_"); at != std::string::npos;
       at = body.find("# TYPE ramguard_", at + 1)) {
    ++types;
    const std::string name = body.substr(at + 7, body.find(' ', at + 7) - at - 7);
    EXPECT_NE(body.find("# HELP " + name + " "), std::string::npos) << name;
  }
  EXPECT_GE(types, 25u);
}

TEST(MetricsExporter, PeakIsTheLargestSeenAndSaysWhetherItIsExact) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  exporter->targets()->observe_peak(kJ, 5'000'000'000, false);  // a sample
  exporter->targets()->observe_peak(kJ, 7'000'000'000, true);   // a high-water mark
  exporter->targets()->observe_peak(kJ, 6'000'000'000, true);   // a later phase's lower peak
  auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_peak_bytes", of(kJ)), 7e9);
  EXPECT_EQ(sample(s, "ramguard_target_peak_exact", of(kJ)), 1);
  exporter->targets()->observe_peak(kJ, 8'000'000'000, false);  // hwm unavailable: only sampled
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_peak_bytes", of(kJ)), 8e9);
  EXPECT_EQ(sample(s, "ramguard_target_peak_exact", of(kJ)), 0);
}

// A periodic reading splits memory as a mark does (status, memory.stat): its shmem and swap are
// exported as read, not carried over from the last mark (which would count /dev/shm memory
// freed or grown since then wrongly until the next mark).
TEST(MetricsExporter, PeriodicReadingIsExportedAsReadBetweenMarks) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  MemoryReading mark;
  mark.source = ReadingSource::kMark;
  mark.rss_bytes = 1000;
  mark.anon_bytes = 700;
  mark.file_bytes = 200;
  mark.shmem_bytes = 100;
  mark.swap_bytes = 50;
  exporter->targets()->observe_reading(kJ, mark);
  MemoryReading periodic;
  periodic.source = ReadingSource::kPeriodic;
  periodic.rss_bytes = 2000;
  periodic.anon_bytes = 1200;
  periodic.file_bytes = 500;
  periodic.shmem_bytes = 300;
  periodic.swap_bytes = 20;
  exporter->targets()->observe_reading(kJ, periodic);
  const auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_rss_bytes", of(kJ)), 2000);
  EXPECT_EQ(sample(s, "ramguard_target_memory_bytes", of(kJ, {{"kind", "anon"}})), 1200);
  EXPECT_EQ(sample(s, "ramguard_target_memory_bytes", of(kJ, {{"kind", "file"}})), 500);
  EXPECT_EQ(sample(s, "ramguard_target_memory_bytes", of(kJ, {{"kind", "shmem"}})), 300);
  EXPECT_EQ(sample(s, "ramguard_target_swap_bytes", of(kJ)), 20);
  EXPECT_EQ(sample(s, "ramguard_target_counted_bytes", of(kJ)), 1200 + 300 + 20);
}

TEST(MetricsExporter, DegradedReasonIsReplacedAndCleared) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  exporter->targets()->set_target_up(kJ, true, "hwm_reset_denied");
  exporter->targets()->set_target_up(kJ, false, "status_unreadable");
  auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_up", of(kJ)), 0);
  // Known reasons are always present: 0 when they do not hold.
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(kJ, {{"reason", "hwm_reset_denied"}})), 0);
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(kJ, {{"reason", "status_unreadable"}})), 1);
  exporter->targets()->set_target_up(kJ, true, "");
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_up", of(kJ)), 1);
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(kJ, {{"reason", "status_unreadable"}})), 0);
}

TEST(MetricsExporter, FreeFormPhaseNamesCannotGrowTheSeriesWithoutBound) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 100; ++i) {
    exporter->targets()->observe_phase(
        kJ, testkit::closed_phase("phase" + std::to_string(i), 1000 + i, 1.0));
  }
  exporter->targets()->observe_phase(kJ, testkit::closed_phase(std::string(500, 'x'), 1, 1.0));
  const auto s = testkit::parse_samples(scrape(*exporter));
  std::size_t series = 0;
  for (const auto& [key, value] : s) series += key.rfind("ramguard_phase_peak_bytes{", 0) == 0;
  EXPECT_EQ(series, 33u);  // 32 distinct names + "other"
  EXPECT_EQ(sample(s, "ramguard_phase_peak_bytes", of(kJ, {{"phase", "phase0"}})), 1000);
  EXPECT_EQ(sample(s, "ramguard_phase_peak_bytes", of(kJ, {{"phase", "other"}})), 1);
}

TEST(MetricsExporter, TwoRunsOfOneJobAreTwoSeries) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  const TargetRef a{"dup", "run-a"}, b{"dup", "run-b"};
  MemoryReading r;
  r.rss_bytes = 43'600'000;
  exporter->targets()->observe_reading(a, r);
  r.rss_bytes = 63'600'000;
  exporter->targets()->observe_reading(b, r);
  const auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_rss_bytes", of(a)), 43.6e6);
  EXPECT_EQ(sample(s, "ramguard_target_rss_bytes", of(b)), 63.6e6);
}

TEST(MetricsExporter, StateSeriesArePresentWithZeroForEveryActiveRun) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  exporter->targets()->set_target_up(kJ, true, "");
  const auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_up", of(kJ)), 1);
  EXPECT_EQ(sample(s, "ramguard_target_exited", of(kJ)), 0);
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(kJ, {{"reason", "hwm_reset_denied"}})), 0);
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(kJ, {{"reason", "unreadable"}})), 0);
  for (const std::string& kind : TargetMetrics::warning_kinds()) {
    EXPECT_EQ(sample(s, "ramguard_verdict_active", of(kJ, {{"kind", kind}})), 0) << kind;
  }
  EXPECT_EQ(TargetMetrics::warning_kinds().size(), 5u);
}

TEST(MetricsExporter, AnExitedTargetIsDownAtOnceAndItsReadingsVanish) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  MemoryReading r;
  r.rss_bytes = 500'000'000;
  exporter->targets()->observe_reading(kJ, r);
  exporter->targets()->observe_peak(kJ, 500'000'000, true);
  Verdict over;
  over.kind = verdict_kind::kOverBudget;
  over.severity = Severity::kCritical;
  over.passed = false;
  exporter->targets()->observe_verdict(kJ, over);
  auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_verdict_active", of(kJ, {{"kind", "over_budget"}})), 1);
  EXPECT_EQ(sample(s, "ramguard_target_rss_bytes", of(kJ)), 5e8);

  exporter->targets()->run_finished(kJ);
  exporter->targets()->set_target_up(kJ, false, "exited");
  exporter->targets()->observe_reading(kJ, r);  // a late reading does not bring a dead process back
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_up", of(kJ)), 0);
  EXPECT_EQ(sample(s, "ramguard_target_exited", of(kJ)), 1);
  EXPECT_FALSE(sample(s, "ramguard_target_rss_bytes", of(kJ)));
  EXPECT_FALSE(sample(s, "ramguard_target_memory_bytes", of(kJ, {{"kind", "anon"}})));
  EXPECT_FALSE(sample(s, "ramguard_target_last_reading_timestamp_seconds", of(kJ)));
  EXPECT_EQ(sample(s, "ramguard_verdict_active", of(kJ, {{"kind", "over_budget"}})), 0);
  // What the run was stays until the retention: its peak and its verdicts.
  EXPECT_EQ(sample(s, "ramguard_target_peak_bytes", of(kJ)), 5e8);
  EXPECT_EQ(sample(s, "ramguard_verdicts_total",
                   of(kJ, {{"kind", "over_budget"}, {"severity", "critical"}})),
            1);
}

// What reading a target costs: the last reading's time, the slow readings counted (a counter:
// never lower, even where folded targets share "other"), the last PSS sum's time once there is
// one. The gauges go with the process; the count stays as long as its verdicts do.
TEST(MetricsExporter, ReadTimesAreGaugesAndSlowReadsACounterThatNeverGoesBack) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  MemoryReading r;
  r.rss_bytes = 1000;
  exporter->targets()->observe_sample(kJ, r, 1000, true, ReadTiming{0.02, 3, 0});
  std::string body = scrape(*exporter);
  auto s = testkit::parse_samples(body);
  EXPECT_EQ(sample(s, "ramguard_target_read_seconds", of(kJ)), 0.02);
  EXPECT_EQ(sample(s, "ramguard_target_slow_reads_total", of(kJ)), 3);
  EXPECT_FALSE(sample(s, "ramguard_target_pss_read_seconds", of(kJ)));
  EXPECT_NE(body.find("# TYPE ramguard_target_slow_reads_total counter\n"), std::string::npos);
  EXPECT_NE(body.find("# TYPE ramguard_target_read_seconds gauge\n"), std::string::npos);
  // The help says what slow means.
  EXPECT_NE(body.find("# HELP ramguard_target_slow_reads_total Readings of the watched process "
                      "slower than sampling.slow_read (10ms by default)"),
            std::string::npos)
      << body;

  exporter->targets()->observe_sample(kJ, r, 1000, true, ReadTiming{0.000004, 1, 0.08});
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_read_seconds", of(kJ)), 0.000004);
  EXPECT_EQ(sample(s, "ramguard_target_slow_reads_total", of(kJ)), 3);  // not back to 1
  EXPECT_EQ(sample(s, "ramguard_target_pss_read_seconds", of(kJ)), 0.08);
  exporter->targets()->observe_sample(kJ, r, 1000, true, ReadTiming{0.000005, 4, 0.08});
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_slow_reads_total", of(kJ)), 4);
  EXPECT_EQ(sample(s, "ramguard_target_pss_read_seconds", of(kJ)), 0.08);

  exporter->targets()->set_target_up(kJ, false, "exited");
  exporter->targets()->observe_sample(kJ, r, 1000, true, ReadTiming{0.5, 9, 0.1});  // late: ignored
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_FALSE(sample(s, "ramguard_target_read_seconds", of(kJ)));
  EXPECT_FALSE(sample(s, "ramguard_target_pss_read_seconds", of(kJ)));
  EXPECT_EQ(sample(s, "ramguard_target_slow_reads_total", of(kJ)), 4);
}

TEST(MetricsExporter, AnUnreadableTargetIsDownUntilItCanBeReadAgain) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  MemoryReading r;
  r.rss_bytes = 1000;
  exporter->targets()->observe_reading(kJ, r);
  exporter->targets()->set_target_up(kJ, false, "unreadable");
  auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_up", of(kJ)), 0);
  EXPECT_EQ(sample(s, "ramguard_target_exited", of(kJ)), 0);
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(kJ, {{"reason", "unreadable"}})), 1);
  exporter->targets()->observe_reading(kJ, r);
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_target_up", of(kJ)), 1);
  EXPECT_EQ(sample(s, "ramguard_target_degraded", of(kJ, {{"reason", "unreadable"}})), 0);
}

TEST(MetricsExporter, AFailedReleaseIsCountedAsFailAndWarningsEndWithTheRun) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  Verdict leak;
  leak.kind = verdict_kind::kLeak;
  leak.severity = Severity::kCritical;
  leak.passed = false;
  exporter->targets()->observe_verdict(kJ, leak);
  auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_verdict_active", of(kJ, {{"kind", "leak"}})), 1);
  exporter->targets()->run_finished(kJ);
  Verdict release;
  release.kind = verdict_kind::kRelease;
  release.severity = Severity::kWarning;
  release.passed = false;
  exporter->targets()->observe_verdict(kJ, release);
  exporter->targets()->observe_verdict(kJ,
                                       leak);  // judged after the end (last boundary): counted only
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(
      sample(s, "ramguard_verdicts_total", of(kJ, {{"kind", "release"}, {"severity", "fail"}})), 1);
  EXPECT_FALSE(
      sample(s, "ramguard_verdicts_total", of(kJ, {{"kind", "release"}, {"severity", "warning"}})));
  EXPECT_EQ(sample(s, "ramguard_verdict_active", of(kJ, {{"kind", "leak"}})), 0);
  EXPECT_EQ(
      sample(s, "ramguard_verdicts_total", of(kJ, {{"kind", "leak"}, {"severity", "critical"}})),
      2);
  // Event kinds are counted, never held: a dead or ended run holds nothing.
  EXPECT_FALSE(sample(s, "ramguard_verdict_active", of(kJ, {{"kind", "release"}})));
  // What stays is free memory the allocator keeps (info, not passed): not a failure, so
  // RamguardReleaseFailed does not fire for it.
  Verdict kept = release;
  kept.severity = Severity::kInfo;
  exporter->targets()->observe_verdict(kJ, kept);
  s = testkit::parse_samples(scrape(*exporter));
  EXPECT_EQ(sample(s, "ramguard_verdicts_total",
                   of(kJ, {{"kind", "release"}, {"severity", "allocator"}})),
            1);
  EXPECT_EQ(
      sample(s, "ramguard_verdicts_total", of(kJ, {{"kind", "release"}, {"severity", "fail"}})), 1);
}

TEST(MetricsExporter, AnAddressInUseIsAClearError) {
  auto first = start_exporter();
  ASSERT_NE(first, nullptr);
  const Endpoint taken{"127.0.0.1", first->port()};
  auto second = MetricsExporter::start(taken);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find(taken.to_string()), std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
  // The first one keeps serving.
  EXPECT_FALSE(scrape(*first).empty());
}

TEST(MetricsExporter, AnAddressThatIsNotLocalIsAClearError) {
  // TEST-NET-1 (RFC 5737): never assigned to a local interface.
  auto exporter = MetricsExporter::start(Endpoint{"192.0.2.1", 0});
  ASSERT_FALSE(exporter.ok());
  EXPECT_NE(exporter.error().message.find("192.0.2.1:0"), std::string::npos);
  EXPECT_NE(exporter.error().message.find("assign"), std::string::npos) << exporter.error().message;
}

}  // namespace
}  // namespace ramguard

namespace ramguard {
namespace {

// The job's history as series (fleet calibration reads them through Prometheus): the largest
// peak per owner, the runs counted, the last peak/estimate ratio.
TEST(MetricsExporter, EndedRunsKeepTheirJobsPeakPerOwner) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  exporter->jobs()->observe_run(testkit::ended_run("fedavg", 1000, 7'000'000'000, 5'000'000'000));
  // No estimate: the ratio stays.
  exporter->jobs()->observe_run(testkit::ended_run("fedavg", 1000, 6'000'000'000, 0));
  exporter->jobs()->observe_run(testkit::ended_run("fedavg", 2000, 9'000'000'000, 9'000'000'000));
  const std::string body = scrape(*exporter);
  EXPECT_NE(body.find("ramguard_job_peak_bytes{ramguard_job=\"fedavg\",uid=\"1000\"} 7000000000"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("ramguard_job_runs{ramguard_job=\"fedavg\",uid=\"1000\"} 2"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("ramguard_job_peak_estimate_ratio{ramguard_job=\"fedavg\",uid=\"1000\"} 1.4"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("ramguard_job_peak_bytes{ramguard_job=\"fedavg\",uid=\"2000\"} 9000000000"),
            std::string::npos)
      << body;
}

// Sampling, the control sessions and civetweb's scrapes reach the parts from different
// threads; the lock each part is handed out under keeps them apart (checked under TSan).
TEST(MetricsExporter, PartsAreWrittenWhileTheyAreScraped) {
  auto exporter = start_exporter();
  ASSERT_NE(exporter, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> written{0};
  std::thread writer([&] {
    for (std::uint64_t i = 1; !stop.load(); ++i) {
      MemoryReading reading;
      reading.rss_bytes = i;
      exporter->targets()->observe_sample(kJ, reading, i, false, ReadTiming{});
      exporter->jobs()->observe_admission("j", 1000, testkit::admission(true, 1));
      exporter->daemon()->set_runs_active(1);
      exporter->table()->sweep(Instant{});
      written = i;
    }
  });
  while (written.load() == 0) std::this_thread::yield();
  std::size_t scraped = 0;
  for (int i = 0; i < 20; ++i) {
    scraped += scrape(*exporter).find("ramguard_target_rss_bytes{") != std::string::npos;
  }
  stop = true;
  writer.join();
  const auto s = testkit::parse_samples(scrape(*exporter));
  EXPECT_GT(scraped, 0u);
  EXPECT_GE(sample(s, "ramguard_target_rss_bytes", of(kJ)).value_or(0), 1);
  EXPECT_EQ(sample(s, "ramguard_runs_active"), 1);
}

}  // namespace
}  // namespace ramguard
