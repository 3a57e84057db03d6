// Slow reads through the real daemon: each target's last reading time and its count of
// readings longer than sampling.slow_read in /metrics, the first one logged, the threshold
// reloaded on SIGHUP, and a tree run's PSS sum timed off the loop.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard::testing {
namespace {

std::string series(const std::string& name, const std::string& job, const std::string& run) {
  return name + "{ramguard_job=\"" + job + "\",run_id=\"" + run + "\"}";
}

std::size_t count_lines(const Daemon& d, const std::string& needle) {
  std::size_t n = 0;
  for (const std::string& line : d.log_lines()) n += line.find(needle) != std::string::npos;
  return n;
}

void expect_promtool_accepts(const std::string& scrape) {
  const auto check = testkit::promtool_check_metrics(scrape);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output, "") << check.output;
}

TEST(SlowReads, AnIdleTargetHasNoneByDefaultAndAReloadedZeroThresholdCountsEveryReading) {
  MemChild child;
  const std::string pid = "pid-" + std::to_string(child.pid());
  const auto config = [&](const std::string& extra) {
    return "sampling: { interval: 100ms" + extra + " }\nwatch: [" + std::to_string(child.pid()) +
           "]\nmetrics: { job_names: plain }\n";
  };
  auto d = Daemon::with_config(config(""));
  const std::string read_seconds = series("ramguard_target_read_seconds", pid, pid);
  const std::string slow_reads = series("ramguard_target_slow_reads_total", pid, pid);
  const std::string last_reading =
      series("ramguard_target_last_reading_timestamp_seconds", pid, pid);

  // About ten readings of a small idle process at the default 10 ms: none is slow.
  double first = std::nan("");
  std::string scrape;
  ASSERT_TRUE(eventually(
      [&] {
        scrape = d->scrape_metrics();
        const double at = metric_value(scrape, last_reading);
        if (std::isnan(first)) first = at;
        return at >= first + 1.0;
      },
      10s))
      << scrape;
  EXPECT_GT(metric_value(scrape, read_seconds), 0.0) << scrape;
  EXPECT_EQ(metric_value(scrape, slow_reads), 0.0) << scrape;
  EXPECT_EQ(count_lines(*d, "event=sampling.slow_read"), 0u) << d->log_text();

  // A reload to 0 s makes every reading slow: the counter grows, the warning comes once.
  std::ofstream(d->socket_path().parent_path() / "ramguard.yaml") << config(", slow_read: 0s");
  ::kill(d->pid(), SIGHUP);
  ASSERT_FALSE(d->wait_for_log("event=config.reloaded").empty()) << d->log_text();
  double counted = 0;
  ASSERT_TRUE(eventually(
      [&] {
        counted = metric_value(d->scrape_metrics(), slow_reads);
        return counted >= 3;
      },
      10s));
  ASSERT_TRUE(eventually(
      [&] {
        scrape = d->scrape_metrics();
        return metric_value(scrape, slow_reads) > counted;
      },
      10s));
  EXPECT_GT(metric_value(scrape, read_seconds), 0.0) << scrape;
  EXPECT_NE(scrape.find("# TYPE ramguard_target_slow_reads_total counter"), std::string::npos);
  const std::string warning = d->wait_for_log("event=sampling.slow_read");
  EXPECT_NE(warning.find("target=" + pid), std::string::npos) << warning;
  EXPECT_NE(warning.find("threshold_seconds=0"), std::string::npos) << warning;
  EXPECT_NE(warning.find("read_seconds="), std::string::npos) << warning;
  EXPECT_EQ(count_lines(*d, "event=sampling.slow_read"), 1u) << d->log_text();
  expect_promtool_accepts(scrape);
}

// A run's readings go through its machine: the warning names the run; its tree's PSS sum at a
// round end is read on the worker and its time exported at the next reading.
TEST(SlowReads, ATreeRunsReadingsAndItsPssSumAreTimed) {
  auto d = Daemon::with_config(
      "sampling: { interval: 100ms, slow_read: 0s }\nmetrics: { job_names: plain }\n");
  MemChild child;
  child.command("alloc a " + std::to_string(32 << 20));
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
  start.mutable_run_start()->set_job("slow-tree");
  start.mutable_run_start()->set_scope("tree");
  const v1::Reply started = d->call(start);
  ASSERT_FALSE(started.has_error()) << started.error().message();
  const std::string run = started.run_start().run_id();
  const std::string slow_reads = series("ramguard_target_slow_reads_total", "slow-tree", run);
  const std::string pss_seconds = series("ramguard_target_pss_read_seconds", "slow-tree", run);

  std::string scrape;
  ASSERT_TRUE(eventually(
      [&] {
        scrape = d->scrape_metrics();
        return metric_value(scrape, slow_reads) >= 3;
      },
      10s))
      << scrape;
  EXPECT_TRUE(std::isnan(metric_value(scrape, pss_seconds))) << "no round end yet";
  const std::string warning = d->wait_for_log("event=sampling.slow_read");
  EXPECT_NE(warning.find("target=" + run), std::string::npos) << warning;
  EXPECT_NE(warning.find("scope=tree"), std::string::npos) << warning;

  v1::Request round;
  round.mutable_mark()->set_run_id(run);
  round.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  const v1::Reply marked = d->call(round);
  ASSERT_FALSE(marked.has_error()) << marked.error().message();
  ASSERT_TRUE(eventually(
      [&] {
        scrape = d->scrape_metrics();
        return metric_value(scrape, pss_seconds) > 0;
      },
      10s))
      << scrape;
  EXPECT_LT(metric_value(scrape, pss_seconds), 10.0);
  EXPECT_EQ(count_lines(*d, "event=sampling.slow_read"), 1u) << d->log_text();
  expect_promtool_accepts(scrape);
}

}  // namespace
}  // namespace ramguard::testing
