// A cgroup-scope coordinator the kernel's OOM killer ends at its cgroup's limit (a real v1
// memory cgroup with a 300 MiB limit, created here and removed after): the periodic readings
// (every 2 s, as by default) rarely see the last climb, but the cgroup's max usage does. The run's
// peak is the cgroup's max usage, the limit within 1%, and the death verdict says the limit was
// reached, in which phase and round.
#include <gtest/gtest.h>

#include <cmath>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kLimit = 300 * kMiB;

TEST(CgroupOomPeak, APeakAtDeathIsTheCgroupsMaxUsageAndTheVerdictSaysTheLimitWasReached) {
  TestMemoryCgroup cgroup("oom-peak");
  if (!cgroup.available()) GTEST_SKIP() << cgroup.problem();
  cgroup.limit(kLimit);
  Daemon::Options o;
  o.config_yaml = "budget: " + std::to_string(4 * kLimit) +
                  "\nsampling:\n  interval: 2s\ngrowth:\n  settle: 300ms\n";
  o.args = {"--log-level", "debug"};
  auto daemon = Daemon::start(std::move(o));
  MemChild child;
  cgroup.add(child.pid());
  child.command("alloc weights " + std::to_string(64 * kMiB));
  ScenarioRun::Start start = ScenarioRun::with("oom-peak", 64 * kMiB, 4);
  start.scope = "cgroup";
  start.cgroup_path = cgroup.dir().string();
  ScenarioRun run(*daemon, child.pid(), start);
  run.begin("aggregation");
  run.end("aggregation");
  run.round_end();
  run.begin("aggregation");
  // Round 2's aggregation asks for more than the limit: the kernel kills the process.
  EXPECT_THROW(child.command("alloc updates " + std::to_string(400 * kMiB)), std::runtime_error);
  const v1::RunStatus s = wait_for_verdict(run, "exited");
  SCOPED_TRACE(verdict_text(s));
  const auto exited = verdicts_of(s, "exited");
  ASSERT_EQ(exited.size(), 1u);
  const v1::Verdict& v = exited[0];
  const double limit = static_cast<double>(kLimit);
  EXPECT_NEAR(figure(v, "cgroup_peak_usage_bytes"), limit, 0.01 * limit) << v.summary();
  EXPECT_NEAR(figure(v, "peak_bytes"), limit, 0.01 * limit) << v.summary();
  EXPECT_EQ(figure(v, "cgroup_limit_bytes"), limit);
  EXPECT_EQ(figure(v, "cgroup_limit_reached"), 1);
  EXPECT_NE(v.summary().find("reached its"), std::string::npos) << v.summary();
  EXPECT_NE(v.summary().find("during aggregation in round 2"), std::string::npos) << v.summary();
  // The run's own peak, as the report and the ledger keep it, is the limit too.
  EXPECT_NEAR(static_cast<double>(s.peak_bytes()), limit, 0.01 * limit);
}

}  // namespace
}  // namespace ramguard::testing
