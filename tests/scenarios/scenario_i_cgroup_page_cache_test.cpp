// Scenario I (README.md): page cache inside a memory cgroup. A cgroup-scope run on a real v1
// memory cgroup (created here, removed after) whose anonymous memory stays flat while each
// round's save writes a model-sized checkpoint file (written and closed, never mapped: page
// cache only, charged to the cgroup). The cgroup's usage climbs one model copy a round, past
// the budget, fast enough in each save to be a runaway by rate; the memory that counts (anon +
// shmem + swap) does not move. So: no growth, runaway, over-budget, headroom or failed release,
// and the page cache is shown beside the memory that counts in the report and the metrics.
//
// Scaled from the figures (0.25 GB model, 6 rounds, budget 1.6 GB = 6.4 copies): model
// 64 MiB, budget 400 MiB; the run ends with ~384 MiB of page cache over ~100 MiB of anonymous
// memory, a usage of ~1.2x the budget.
#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kModel = 64 * kMiB;
constexpr std::uint64_t kBudget = 400 * kMiB;
constexpr int kRounds = 6;

std::string config() {
  // Runaway by rate at 20 MB/s over 1 s: each save writes 64 MiB in 2 s (32 MiB/s), so a guard
  // judging the cgroup's usage calls it a runaway.
  return "budget: " + std::to_string(kBudget) +
         "\nmetrics: { job_names: plain }\nsampling:\n  interval: 100ms\n"
         "growth:\n  min_bytes: " +
         std::to_string(8 * kMiB) +
         "\n  settle: 300ms\n  runaway_bytes_per_second: 20MB\n  runaway_min_duration: 1s\n"
         "release:\n  slack: " +
         std::to_string(16 * kMiB) + "\n  grace: 3s\n";
}

TEST(ScenarioI, CheckpointPageCacheInACgroupIsShownNeverJudged) {
  TestMemoryCgroup cgroup("scenario-i");
  if (!cgroup.available()) GTEST_SKIP() << cgroup.problem();
  Daemon::Options o;
  o.config_yaml = config();
  o.args = {"--log-level", "debug"};
  auto daemon = Daemon::start(std::move(o));
  const auto dir = make_temp_dir("scenario-i");  // on disk (tmpfs would be shmem, which counts)
  {
    MemChild child;
    cgroup.add(child.pid());
    child.command("alloc weights " + std::to_string(96 * kMiB));  // the flat anonymous part
    ScenarioRun::Start start = ScenarioRun::with("scenario-i", kModel, kRounds);
    start.scope = "cgroup";
    start.cgroup_path = cgroup.dir().string();
    ScenarioRun run(*daemon, child.pid(), start);
    for (int r = 1; r <= kRounds; ++r) {
      run.begin("aggregation");
      child.command("spike " + std::to_string(32 * kMiB) + " 20");
      run.end("aggregation");
      run.begin("save");
      child.command("write " + (dir / ("ckpt" + std::to_string(r))).string() + " " +
                    std::to_string(kModel) + " 2000");
      run.end("save");
      run.round_end();
      run.wait_settled(run.rounds_ended());
    }
    // The cache really is in the cgroup's usage: past the budget, more than 5 copies of it.
    const std::uint64_t usage = cgroup.read("memory.usage_in_bytes");
    ASSERT_GT(usage, kBudget) << "the checkpoints' page cache was not charged to the cgroup";

    const std::string scrape = daemon->scrape_metrics();
    const std::string of_run = "ramguard_job=\"scenario-i\",run_id=\"" + run.id() + "\"";
    const double file_metric =
        metric_value(scrape, "ramguard_target_memory_bytes{kind=\"file\"," + of_run + "}");
    const double counted_metric =
        metric_value(scrape, "ramguard_target_counted_bytes{" + of_run + "}");
    const double floor_metric =
        metric_value(scrape, "ramguard_boundary_counted_floor_bytes{" + of_run + "}");
    const double peak_metric = metric_value(scrape, "ramguard_target_peak_bytes{" + of_run + "}");
    run.finish();
    // Release is judged on the counted memory: it is back at (never left) the baseline.
    const v1::RunStatus s = wait_for_verdict(run, "release");
    SCOPED_TRACE(verdict_text(s) + floors_text(s));
    EXPECT_TRUE(verdicts_of(s, "leak").empty());
    EXPECT_TRUE(verdicts_of(s, "growth_warning").empty());
    EXPECT_TRUE(verdicts_of(s, "runaway").empty());
    EXPECT_TRUE(verdicts_of(s, "over_budget").empty());
    EXPECT_TRUE(verdicts_of(s, "headroom").empty());
    EXPECT_TRUE(verdicts_of(s, "growth_class").empty());
    const auto release = verdicts_of(s, "release");
    ASSERT_EQ(release.size(), 1u);
    EXPECT_TRUE(release[0].passed()) << release[0].summary();

    // The report: each boundary's page cache climbs a model copy a round beside a flat
    // anonymous part, and the run's peak is of the memory that counts (under the budget).
    ASSERT_EQ(s.boundaries_size(), kRounds);
    const auto& first = s.boundaries(0).reading();
    const auto& last = s.boundaries(kRounds - 1).reading();
    EXPECT_NEAR(static_cast<double>(last.file_bytes()) - static_cast<double>(first.file_bytes()),
                static_cast<double>((kRounds - 1) * kModel), 8.0 * kMiB);
    EXPECT_LT(static_cast<double>(last.anon_bytes()) - static_cast<double>(first.anon_bytes()),
              static_cast<double>(8 * kMiB));
    EXPECT_GT(last.rss_bytes(), kBudget) << "the usage alone would be over the budget";
    EXPECT_LT(s.peak_bytes(), kBudget / 2) << "peak of counted memory";

    // The metrics show the same split: page cache in its own series, the counted figure, the
    // counted floor and the counted peak well under the budget.
    EXPECT_GE(file_metric, static_cast<double>(5 * kModel)) << scrape;
    EXPECT_GT(counted_metric, static_cast<double>(90 * kMiB)) << scrape;
    EXPECT_LT(counted_metric, static_cast<double>(kBudget / 2)) << scrape;
    EXPECT_LT(floor_metric, static_cast<double>(kBudget / 2)) << scrape;
    EXPECT_LT(peak_metric, static_cast<double>(kBudget / 2)) << scrape;
    child.command("exit 0");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ramguard::testing
