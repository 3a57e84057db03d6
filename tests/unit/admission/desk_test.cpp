// The admission desk with plain fakes for the machine, the Load's process and the job's
// history: the estimate and its source, who may admit for which process, the scope's
// baseline, and the machine's runs and caps reaching the decision.
#include "admission/desk.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace ramguard {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::uint64_t kGB = 1'000'000'000ULL;

struct FakeBaselines final : LoadBaselines {
  std::map<pid_t, LoadProcess> processes;
  std::uint64_t tree_bytes = 0;
  std::vector<Scope> scopes_read;
  Result<LoadProcess> process(pid_t pid) override {
    auto it = processes.find(pid);
    if (it == processes.end())
      return Error{"no process " + std::to_string(pid), ErrorKind::kNotFound};
    return it->second;
  }
  Result<std::uint64_t> scope_baseline(pid_t, Scope scope, std::uint64_t own) override {
    scopes_read.push_back(scope);
    return own + tree_bytes;
  }
};

struct FakeMachine final : MachineState {
  std::vector<RunHolding> runs;
  AdmitCaps limits;
  std::vector<pid_t> asked;
  std::vector<RunHolding> holdings() override { return runs; }
  AdmitCaps caps(pid_t pid) override {
    asked.push_back(pid);
    return limits;
  }
};

// Each run on record has an owner; the desk says whose runs may count.
struct FakeHistory final : JobHistory {
  std::map<std::uint32_t, MeasuredPeak> peaks;  // by owner
  std::vector<std::vector<std::uint32_t>> asked;
  std::optional<MeasuredPeak> peak_on_record(const std::string&,
                                             const std::vector<std::uint32_t>& owners) override {
    asked.push_back(owners);
    std::optional<MeasuredPeak> best;
    for (const auto& [uid, p] : peaks) {
      const bool counts =
          owners.empty() || std::find(owners.begin(), owners.end(), uid) != owners.end();
      if (counts && (!best || p.peak_bytes > best->peak_bytes)) best = p;
    }
    return best;
  }
  std::vector<std::string> prepared;
  std::string note_text;
  void prepare(const std::string& job, std::function<void()> ready) override {
    prepared.push_back(job);
    ready();
  }
  std::string note(const std::string&) override { return note_text; }
};

class DeskTest : public ::testing::Test {
 protected:
  DeskTest() {
    DeskSettings s;
    // 1 copy + host updates + 1 copy, no overhead: (hosts + 2) model copies.
    s.plans["fedavg"] = MemoryPlan{
        "fedavg",
        {{"aggregation", {{"global", 1, false}, {"host_updates", 1, true}, {"result", 1, false}}}},
        0};
    desk_.set_settings(s);
    desk_.set_history(&history_);
    baselines_.processes[100] = {1000, kGB / 10};  // the caller's coordinator, uid 1000
    baselines_.processes[200] = {2000, kGB / 10};  // another user's process
  }

  AdmitAsk plan_ask() {
    AdmitAsk a;
    a.job = "vit";
    a.plan = "fedavg";
    a.model_bytes = kGB;
    a.hosts = 2;
    return a;
  }

  FakeClock clock_;
  Admission admission_{16 * kGB, 0, seconds(60), clock_};
  FakeBaselines baselines_;
  FakeMachine machine_;
  FakeHistory history_;
  AdmissionDesk desk_{admission_, baselines_, machine_, {}};
  Caller user_{100, 1000, false};
  Caller root_{1, 0, true};
};

TEST_F(DeskTest, APlanAskIsEstimatedFromThePlanAndReservedForTheCaller) {
  auto out = desk_.admit(plan_ask(), user_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->decision.admitted);
  EXPECT_EQ(out->decision.estimate_bytes, 4 * kGB);
  EXPECT_EQ(out->decision.estimate_source.text(), "plan:fedavg");
  EXPECT_EQ(out->decision.baseline_bytes, kGB / 10);  // the caller's own process
  EXPECT_EQ(out->pid, 100);
  EXPECT_EQ(out->owner_uid, 1000u);
  EXPECT_THAT(out->reason, HasSubstr("; estimate: plan fedavg, aggregation dominates"));
  EXPECT_EQ(admission_.reserved_bytes(), 4 * kGB);
}

TEST_F(DeskTest, AGlibcLoaderGetsTheAllocatorTermNamedInTheReason) {
  AdmitAsk ask = plan_ask();
  ask.allocator = "glibc";
  auto out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  const auto retained = static_cast<std::uint64_t>(kGlibcRetainedModelCopies * kGB);
  EXPECT_EQ(out->decision.estimate_bytes, 4 * kGB + retained);
  EXPECT_EQ(out->decision.estimate_source.text(), "plan:fedavg");
  EXPECT_THAT(out->reason, HasSubstr("; allocator: glibc malloc keeps ~"));
  EXPECT_THAT(out->reason, HasSubstr("remedy: run it under jemalloc"));
  ask.allocator = "jemalloc";
  auto jemalloc = desk_.admit(ask, user_);
  ASSERT_TRUE(jemalloc.ok()) << jemalloc.error().message;
  EXPECT_EQ(jemalloc->decision.estimate_bytes, 4 * kGB);
  EXPECT_THAT(jemalloc->reason, Not(HasSubstr("allocator")));
}

TEST_F(DeskTest, ACalibratedEstimateKeepsTheAsksPlanForTheRunsYardstick) {
  history_.peaks[1000] = MeasuredPeak{"r-7", 5 * kGB, ""};
  AdmitAsk ask = plan_ask();
  ask.use_calibrated = true;
  auto out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->decision.estimate_bytes, 5'500'000'000u);
  EXPECT_EQ(out->decision.estimate_source.text(), "calibrated:r-7");
  EXPECT_EQ(out->decision.estimate_source.plan, "fedavg");
  EXPECT_THAT(out->reason, HasSubstr("measured peak 5.00 GB of run r-7 x 1.10"));
}

// Another user's run under the same job name does not calibrate this user's Load (it could
// lower the estimate at will); the owner's own runs and root's (trusted by default) do.
TEST_F(DeskTest, OnlyTheOwnersAndTrustedUsersRunsCalibrate) {
  history_.peaks[2000] = MeasuredPeak{"r-tiny", 10'000'000, ""};  // uid 2000's tiny run of "vit"
  AdmitAsk ask = plan_ask();
  ask.use_calibrated = true;
  auto out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->decision.estimate_source.text(), "plan:fedavg");
  EXPECT_EQ(out->decision.estimate_bytes, 4 * kGB);
  ASSERT_EQ(history_.asked.size(), 1u);
  EXPECT_EQ(history_.asked[0], (std::vector<std::uint32_t>{0, 1000}));

  history_.peaks[0] = MeasuredPeak{"r-root", 3 * kGB, ""};  // root's run: trusted
  out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->decision.estimate_source.text(), "calibrated:r-root");

  DeskSettings trusting;  // uid 2000 trusted too, and the plan still configured
  trusting.plans = {{"fedavg", MemoryPlan{"fedavg", {{"aggregation", {{"global", 1, false}}}}, 0}}};
  trusting.trusted_uids = {0, 2000};
  desk_.set_settings(trusting);
  out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->decision.estimate_source.text(), "calibrated:r-root");  // the larger peak
  history_.peaks.erase(0);
  out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->decision.estimate_source.text(), "calibrated:r-tiny");
}

TEST_F(DeskTest, BadAsksAreErrorsThatReserveNothing) {
  AdmitAsk unknown = plan_ask();
  unknown.plan = "fedavgg";
  auto out = desk_.admit(unknown, user_);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.error().message, HasSubstr("unknown plan 'fedavgg' (configured plans: fedavg)"));

  AdmitAsk gone = plan_ask();
  gone.pid = 999;
  out = desk_.admit(gone, user_);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, ErrorKind::kNotFound);

  AdmitAsk nothing;
  nothing.job = "vit";
  EXPECT_FALSE(desk_.admit(nothing, user_).ok());
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
  EXPECT_TRUE(machine_.asked.empty());  // nothing was decided
}

TEST_F(DeskTest, AnotherUsersProcessIsNotABaselineUnderOwnButRootMayAdmitForIt) {
  AdmitAsk theirs = plan_ask();
  theirs.pid = 200;
  auto denied = desk_.admit(theirs, user_);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().kind, ErrorKind::kPermissionDenied);
  EXPECT_THAT(denied.error().message,
              HasSubstr("uid 1000 may not admit with PID 200: it is owned by uid 2000"));

  // Root admitting for it: the reservation is the process owner's, to claim for its run.
  auto for_them = desk_.admit(theirs, root_);
  ASSERT_TRUE(for_them.ok()) << for_them.error().message;
  EXPECT_EQ(for_them->owner_uid, 2000u);

  // Under `all` a group member may use it as a baseline; the reservation stays its own.
  DeskSettings all;
  all.peers_read = PeersRead::kAll;
  desk_.set_settings(all);
  AdmitAsk given;
  given.estimate_bytes = kGB;
  given.pid = 200;
  auto shared = desk_.admit(given, user_);
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  EXPECT_EQ(shared->owner_uid, 1000u);
}

TEST_F(DeskTest, TheScopesBaselineAndTheMachinesRunsAndCapsDecide) {
  baselines_.tree_bytes = kGB;
  machine_.runs = {{"r-a", 6 * kGB}};
  machine_.limits.cgroup_limit_bytes = 10 * kGB;
  machine_.limits.cgroup_dir = "/sys/fs/cgroup/memory/job";
  AdmitAsk ask = plan_ask();  // 4 GB
  ask.scope = Scope::kTree;
  auto out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(baselines_.scopes_read, std::vector<Scope>{Scope::kTree});
  EXPECT_EQ(out->decision.baseline_bytes, kGB + kGB / 10);
  // 1.1 GB baseline + r-a's 6 GB + 4 GB = 11.1 GB > the cgroup's 10 GB.
  EXPECT_FALSE(out->decision.admitted);
  EXPECT_EQ(out->decision.binding_cap, BudgetCap::kCgroup);
  EXPECT_THAT(out->reason, HasSubstr("r-a"));
  EXPECT_EQ(machine_.asked, std::vector<pid_t>{100});
}

}  // namespace
}  // namespace ramguard

namespace ramguard {
namespace {

// The history is prepared (a fleet query) only for asks that may calibrate, and what it notes
// (a fleet that could not be asked) reaches the reason.
TEST_F(DeskTest, TheHistoryIsPreparedOnlyWhenItCanSetTheEstimateAndItsNoteIsInTheReason) {
  bool ready = false;
  desk_.prepare(plan_ask(), [&] { ready = true; });
  EXPECT_TRUE(ready);
  EXPECT_TRUE(history_.prepared.empty());  // a plan ask without use_calibrated: no history

  AdmitAsk calibrated = plan_ask();
  calibrated.use_calibrated = true;
  ready = false;
  desk_.prepare(calibrated, [&] { ready = true; });
  EXPECT_TRUE(ready);
  EXPECT_EQ(history_.prepared, std::vector<std::string>{"vit"});

  history_.note_text = "fleet history unavailable (x): local history only";
  auto out = desk_.admit(calibrated, user_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(out->reason, HasSubstr("; fleet history unavailable (x): local history only"));
  auto plain = desk_.admit(plan_ask(), user_);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->reason, ::testing::Not(HasSubstr("fleet history")));
}

// A peak from another node says where it comes from instead of naming a local run.
TEST_F(DeskTest, AFleetPeakIsNamedByItsOrigin) {
  history_.peaks[1000] =
      MeasuredPeak{"fleet:node-a", 5 * kGB, "fleet peak 5.00 GB over 30 d, node-a"};
  AdmitAsk ask = plan_ask();
  ask.use_calibrated = true;
  auto out = desk_.admit(ask, user_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->decision.estimate_source.text(), "calibrated:fleet:node-a");
  EXPECT_THAT(
      out->reason,
      HasSubstr("estimate: calibrated: fleet peak 5.00 GB over 30 d, node-a x 1.10 = 5.50 GB"));
}

}  // namespace
}  // namespace ramguard
