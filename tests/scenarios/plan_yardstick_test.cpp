// Runaway and headroom that know the plan, against the real daemon and a real process: a
// phase that grows fast but as planned gets no runaway verdict, one that outgrows its plan gets
// one within a couple of samples, a run without a plan keeps the rate rule, and a phase planned
// into the headroom is warned about at its begin mark. Scaled: a 32 MiB model, 2 hosts, plan
// fedavg (aggregation = 4 model copies), samples every 100 ms, rate rule 20 MB/s for 1 s.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kModel = 32 * kMiB;
constexpr std::uint64_t kChunk = 8 * kMiB;  // one allocation every 100 ms: 84 MB/s

std::string config(std::uint64_t budget_bytes) {
  return "budget: " + std::to_string(budget_bytes) +
         "\nsampling:\n  interval: 100ms\n"
         "growth:\n  settle: 300ms\n  runaway_bytes_per_second: 20MB\n"
         "  runaway_min_duration: 1s\n"
         "plans:\n  fedavg:\n    overhead: 0\n    phases:\n"
         "      load: { global: 1, staging: 1 }\n"
         "      aggregation: { global: 1, host_updates: hosts, result: 1 }\n";
}

std::unique_ptr<Daemon> start_daemon(std::uint64_t budget_bytes) {
  Daemon::Options o;
  o.config_yaml = config(budget_bytes);
  o.args = {"--log-level", "debug"};
  return Daemon::start(std::move(o));
}

// Admits a Load with the plan and starts the run on the reservation.
ScenarioRun::Start planned_start(const Daemon& daemon, pid_t pid) {
  v1::Request req;
  auto* a = req.mutable_admit();
  a->set_job("plan-yardstick");
  a->set_plan("fedavg");
  a->set_hosts(2);
  a->mutable_model()->set_model_bytes(kModel);
  a->set_pid(static_cast<std::uint32_t>(pid));
  const v1::Reply reply = daemon.call(req);
  EXPECT_TRUE(reply.has_admit()) << reply.error().message();
  EXPECT_TRUE(reply.admit().admitted()) << reply.admit().reason();
  auto start = ScenarioRun::with("plan-yardstick", kModel);
  start.hosts = 2;
  start.reservation_id = reply.admit().reservation_id();
  return start;
}

// Allocates a chunk every 100 ms until `until` holds or `max_chunks` were allocated.
int grow(MemChild& child, int max_chunks, const std::function<bool()>& until) {
  static int serial = 0;
  for (int i = 0; i < max_chunks; ++i) {
    child.command("alloc g" + std::to_string(++serial) + " " + std::to_string(kChunk));
    std::this_thread::sleep_for(100ms);
    if (until()) return i + 1;
  }
  return max_chunks;
}

TEST(PlanYardstick, PlannedFastGrowthIsNoRunawayAndGrowthPastThePlanIsCaughtAtOnce) {
  auto daemon = start_daemon(2'000'000'000);
  MemChild child;
  ScenarioRun run(*daemon, child.pid(), planned_start(*daemon, child.pid()));
  // The plan's limit starts from the baseline's memory that counts (anon + shmem + swap).
  const std::uint64_t baseline = counted(run.start_reply().baseline());
  const std::uint64_t limit = baseline + 4 * kModel;
  child.command("alloc global " + std::to_string(kModel));
  run.begin("aggregation");
  // Up to 3 of the 4 planned copies at 84 MB/s for ~1.3 s: the rate rule would fire.
  auto runaway_seen = [&] { return !verdicts_of(run.status(), "runaway").empty(); };
  grow(child, 11, [] { return false; });
  std::this_thread::sleep_for(500ms);
  ASSERT_LT(child.command("rss"), limit);
  EXPECT_FALSE(runaway_seen()) << verdict_text(run.status());

  // Now past the plan: the verdict must come within a couple of samples of crossing.
  const int chunks = grow(child, 40, runaway_seen);
  const v1::RunStatus s = run.status();
  const auto runaway = verdicts_of(s, "runaway");
  ASSERT_EQ(runaway.size(), 1u) << "after " << chunks << " chunks: " << verdict_text(s);
  EXPECT_NE(runaway[0].summary().find("yardstick: the plan"), std::string::npos)
      << runaway[0].summary();
  EXPECT_NEAR(figure(runaway[0], "limit_bytes"), static_cast<double>(limit), 1.0);
  // Crossed at most a few chunks (samples) before it was called.
  EXPECT_LE(figure(runaway[0], "over_bytes"), static_cast<double>(5 * kChunk))
      << runaway[0].summary();
  run.end("aggregation");
  run.finish();
}

TEST(PlanYardstick, WithoutAPlanTheRateRuleStillCatchesFastGrowth) {
  auto daemon = start_daemon(2'000'000'000);
  MemChild child;
  ScenarioRun run(*daemon, child.pid(), ScenarioRun::with("no-plan", kModel));
  run.begin("aggregation");
  auto runaway_seen = [&] { return !verdicts_of(run.status(), "runaway").empty(); };
  grow(child, 40, runaway_seen);
  const auto runaway = verdicts_of(run.status(), "runaway");
  ASSERT_EQ(runaway.size(), 1u) << verdict_text(run.status());
  EXPECT_NE(runaway[0].summary().find("yardstick: rate"), std::string::npos)
      << runaway[0].summary();
  run.end("aggregation");
  run.finish();
}

TEST(PlanYardstick, APhasePlannedIntoTheHeadroomIsWarnedAtItsBeginMark) {
  MemChild child;
  const std::uint64_t rss = child.command("rss");
  // The aggregation level (baseline + 4 copies) is 95% of the budget; the load (2 copies) is
  // well under the 90% headroom line. Admission still fits: 128 MiB of estimate < budget.
  const auto budget = static_cast<std::uint64_t>(static_cast<double>(rss + 4 * kModel) / 0.95);
  auto daemon = start_daemon(budget);
  ScenarioRun run(*daemon, child.pid(), planned_start(*daemon, child.pid()));
  run.begin("load");
  EXPECT_TRUE(verdicts_of(run.status(), "headroom").empty()) << verdict_text(run.status());
  run.end("load");
  const v1::MarkReply begin = run.begin("aggregation");  // nothing allocated yet
  bool forecast = false;
  for (const auto& v : begin.verdicts()) {
    if (v.kind() == "headroom" && v.summary().find("Forecast") != std::string::npos) {
      forecast = true;
    }
  }
  EXPECT_TRUE(forecast) << "the begin mark's reply carries the forecast; "
                        << verdict_text(run.status());
  run.end("aggregation");
  run.finish();
}

}  // namespace
}  // namespace ramguard::testing
