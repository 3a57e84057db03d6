// Scenario J (README.md): workers leak, the coordinator is flat. A tree-scope run on this test
// process (the coordinator, whose memory does not change) with two memchild workers (its
// children) that each keep 0.2 model copies more every round. The round ends carry the
// coordinator's allocator facts, flat: its heap did not grow. The growth verdict names the two
// workers' PIDs and command with their per-round growth, and says the coordinator is flat; no
// verdict claims "allocator retention" for heaps the probe never saw.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kModel = 100 * kMiB;
constexpr std::uint64_t kKeptPerRound = kModel / 5;  // 0.2 model copies per worker per round
constexpr int kRounds = 5;

v1::MarkReply round_end_with_flat_heap(const Daemon& daemon, const std::string& run) {
  v1::Request req;
  auto* m = req.mutable_mark();
  m->set_run_id(run);
  m->set_kind(v1::MarkRequest::ROUND_END);
  auto* a = m->mutable_allocator();  // the coordinator's own heap: the same every round
  a->set_allocated_bytes(50 * kMiB);
  a->set_active_bytes(50 * kMiB);
  a->set_resident_bytes(60 * kMiB);
  a->set_retained_bytes(10 * kMiB);
  a->set_allocator("glibc");
  const v1::Reply reply = daemon.call(req);
  if (reply.has_error()) ADD_FAILURE() << reply.error().message();
  return reply.mark();
}

TEST(ScenarioJ, GrowthIsNamedOnTheWorkersNotOnTheCoordinatorsAllocator) {
  auto daemon = start_scenario_daemon({.budget_bytes = 16ULL * 1024 * kMiB,
                                       .growth_min_bytes = 16 * kMiB,
                                       .release_slack_bytes = 16 * kMiB,
                                       .extra = ""});
  MemChild worker_a;
  MemChild worker_b;
  ScenarioRun::Start start = ScenarioRun::with("scenario-j", kModel, 0);
  start.scope = "tree";
  ScenarioRun run(*daemon, ::getpid(), start);
  for (int r = 1; r <= kRounds; ++r) {
    run.begin("aggregation");
    const std::uint64_t kept = static_cast<std::uint64_t>(r) * kKeptPerRound;
    worker_a.command("alloc kept " + std::to_string(kept));
    worker_b.command("alloc kept " + std::to_string(kept));
    run.end("aggregation");
    round_end_with_flat_heap(*daemon, run.id());
    run.wait_settled(static_cast<std::uint32_t>(r));
  }
  const v1::RunStatus s = run.status();
  SCOPED_TRACE(verdict_text(s) + floors_text(s));

  // The growth is found (warning, then leak once the fit has rounds enough) ...
  std::vector<v1::Verdict> growth = verdicts_of(s, "growth_warning");
  for (const auto& v : verdicts_of(s, "leak")) growth.push_back(v);
  ASSERT_FALSE(growth.empty());
  // ... and every one of them names both workers, with their growth, and the flat coordinator.
  const double per_worker = static_cast<double>(kKeptPerRound);
  for (const v1::Verdict& v : growth) {
    for (const pid_t pid : {worker_a.pid(), worker_b.pid()}) {
      EXPECT_NE(v.summary().find("worker " + std::to_string(pid) + " memchild +"),
                std::string::npos)
          << v.summary();
      EXPECT_NEAR(figure(v, "process_" + std::to_string(pid) + "_bytes_per_round"), per_worker,
                  0.1 * per_worker)
          << v.summary();
    }
    EXPECT_NE(v.summary().find("coordinator " + std::to_string(::getpid())), std::string::npos)
        << v.summary();
    EXPECT_LT(std::abs(figure(v, "coordinator_bytes_per_round")), 0.25 * per_worker) << v.summary();
  }
  // The coordinator's heap was measured flat: the class says the growth is elsewhere in the
  // tree, never allocator retention.
  const auto classes = verdicts_of(s, "growth_class");
  ASSERT_FALSE(classes.empty());
  for (const v1::Verdict& v : classes) {
    EXPECT_EQ(v.summary().find("allocator_retention"), std::string::npos) << v.summary();
    EXPECT_EQ(v.summary().rfind("other_processes", 0), 0u) << v.summary();
    EXPECT_NE(v.summary().find("worker " + std::to_string(worker_a.pid())), std::string::npos)
        << v.summary();
  }
  run.finish();
  worker_a.command("exit 0");
  worker_b.command("exit 0");
}

}  // namespace
}  // namespace ramguard::testing
