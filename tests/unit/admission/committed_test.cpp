// The committed-memory sum and the caps on the budget (docs/admission.md): every active run at
// max(what it holds, its reservations), unclaimed reservations as they are, expired leases not
// at all; the node cap (MemAvailable less what is promised but not yet allocated) and the
// cgroup limit as budgets, and the refusal naming the cap. Time is a FakeClock.
#include <gtest/gtest.h>

#include "admission/admission.hpp"

namespace ramguard {
namespace {

using std::chrono::seconds;
constexpr std::uint64_t kMB = 1'000'000;
constexpr std::uint64_t kGB = 1'000'000'000;

class CommittedTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  Admission admission_{3 * kGB, 0, seconds(60), clock_};

  Decision admit(std::uint64_t estimate, const std::vector<RunHolding>& runs = {},
                 const AdmitCaps& caps = {}, std::uint64_t baseline = 0) {
    return admission_.admit({"job", estimate, EstimateSource{}, baseline}, runs, caps);
  }
  std::string reserve_for(const std::string& run, std::uint64_t bytes) {
    const Decision d = admit(bytes);
    EXPECT_TRUE(d.admitted) << d.reason;
    EXPECT_TRUE(admission_.claim(d.reservation_id, run, Caller{}).ok());
    return d.reservation_id;
  }
};

// Scenario M: A reserved 0.20 GB and holds 2.02 GB; B's 1.40 GB would make 3.42 GB of 3 GB.
TEST_F(CommittedTest, ARunPastItsReservationCountsWhatItHolds) {
  reserve_for("r-a", 200 * kMB);
  const Decision b = admit(1400 * kMB, {{"r-a", 2020 * kMB}}, {}, 18 * kMB);
  EXPECT_FALSE(b.admitted);
  EXPECT_EQ(b.reserved_bytes, 200 * kMB);
  EXPECT_EQ(b.committed_bytes, 2020 * kMB);
  ASSERT_EQ(b.runs.size(), 1u);
  EXPECT_EQ(b.runs[0].run_id, "r-a");
  EXPECT_EQ(b.runs[0].held_bytes, 2020 * kMB);
  EXPECT_EQ(b.runs[0].reserved_bytes, 200 * kMB);
  EXPECT_EQ(b.runs[0].counted_bytes, 2020 * kMB);
  EXPECT_EQ(b.headroom_bytes, -438 * static_cast<std::int64_t>(kMB));
  EXPECT_EQ(b.reason,
            "refused: baseline 18.0 MB + committed 2.02 GB (run r-a holds 2.02 GB, reserved "
            "0.20 GB: counted 2.02 GB; unclaimed reservations 0 B) + estimate 1.40 GB (given) = "
            "3.44 GB > budget 3.00 GB - margin 0 B; headroom -0.44 GB");
}

TEST_F(CommittedTest, ARunBelowItsReservationCountsTheReservation) {
  reserve_for("r-a", 1 * kGB);
  const Decision b = admit(2 * kGB, {{"r-a", 300 * kMB}});
  EXPECT_TRUE(b.admitted) << b.reason;
  EXPECT_EQ(b.committed_bytes, 1 * kGB);
  EXPECT_EQ(b.unallocated_bytes, 700 * kMB);  // reserved but not yet held
  EXPECT_EQ(b.headroom_bytes, 0);
}

TEST_F(CommittedTest, RunsWithoutReservationCountWhatTheyHoldAndUnclaimedCountAsReserved) {
  admit(500 * kMB);  // unclaimed
  const Decision d = admit(1 * kGB, {{"r-free", 1200 * kMB}});
  EXPECT_TRUE(d.admitted) << d.reason;
  EXPECT_EQ(d.unclaimed_bytes, 500 * kMB);
  EXPECT_EQ(d.committed_bytes, 1700 * kMB);
  ASSERT_EQ(d.runs.size(), 1u);
  EXPECT_EQ(d.runs[0].reserved_bytes, 0u);
  EXPECT_EQ(d.runs[0].counted_bytes, 1200 * kMB);
  // 0.5 + 1.2 + 1.0 (the reservation just made) + 0.4 > 3.
  EXPECT_FALSE(admit(400 * kMB, {{"r-free", 1200 * kMB}}).admitted);
}

TEST_F(CommittedTest, AnExpiredLeaseNoLongerCommitsAndAClaimedOneNeverExpires) {
  admit(2 * kGB);  // unclaimed, lease 60 s
  reserve_for("r-a", 500 * kMB);
  EXPECT_FALSE(admit(1 * kGB, {{"r-a", 100 * kMB}}).admitted);
  clock_.advance(seconds(61));
  const Decision d = admit(1 * kGB, {{"r-a", 100 * kMB}});
  EXPECT_TRUE(d.admitted) << d.reason;
  EXPECT_EQ(d.unclaimed_bytes, 0u);
  EXPECT_EQ(d.committed_bytes, 500 * kMB);  // the claimed one, at its reservation
}

TEST_F(CommittedTest, TheNodeCapIsMemAvailableLessWhatIsPromisedButNotHeld) {
  admit(300 * kMB);  // unclaimed: the node does not see it yet
  AdmitCaps caps;
  caps.node_available_bytes = 1 * kGB;
  // Free for a new Load: 1.0 - 0.3 = 0.7 GB.
  const Decision over = admit(800 * kMB, {}, caps, 50 * kMB);
  EXPECT_FALSE(over.admitted);
  EXPECT_EQ(over.binding_cap, BudgetCap::kNode);
  ASSERT_TRUE(over.node_cap_bytes.has_value());
  EXPECT_EQ(*over.node_cap_bytes, 50 * kMB + 300 * kMB + 700 * kMB);
  EXPECT_EQ(over.effective_budget_bytes, *over.node_cap_bytes);
  EXPECT_EQ(over.headroom_bytes, -100 * static_cast<std::int64_t>(kMB));
  EXPECT_NE(over.reason.find("budget 1.05 GB (node cap)"), std::string::npos) << over.reason;
  EXPECT_NE(over.reason.find("MemAvailable 1.00 GB - unallocated reservations 0.30 GB"),
            std::string::npos)
      << over.reason;
  EXPECT_NE(over.reason.find("refused by the node cap"), std::string::npos) << over.reason;
  const Decision fits = admit(700 * kMB, {}, caps, 50 * kMB);
  EXPECT_TRUE(fits.admitted) << fits.reason;
  EXPECT_EQ(fits.headroom_bytes, 0);
}

TEST_F(CommittedTest, TheCgroupLimitCapsTheBudgetAndTheSmallestCapBinds) {
  AdmitCaps caps;
  caps.node_available_bytes = 20 * kGB;
  caps.cgroup_limit_bytes = 1 * kGB;
  caps.cgroup_dir = "/sys/fs/cgroup/memory/pod";
  const Decision over = admit(1 * kGB + 1, {}, caps);
  EXPECT_FALSE(over.admitted);
  EXPECT_EQ(over.binding_cap, BudgetCap::kCgroup);
  EXPECT_EQ(over.effective_budget_bytes, 1 * kGB);
  EXPECT_EQ(over.budget_bytes, 3 * kGB);  // the configured one is reported as it is
  EXPECT_NE(over.reason.find("cgroup 1.00 GB (/sys/fs/cgroup/memory/pod)"), std::string::npos)
      << over.reason;
  EXPECT_NE(over.reason.find("refused by the cgroup cap"), std::string::npos);
  EXPECT_TRUE(admit(1 * kGB, {}, caps).admitted);

  // A configured budget below both caps binds and is named.
  caps.cgroup_limit_bytes = 10 * kGB;
  const Decision budget = admit(3 * kGB, {}, caps);
  EXPECT_FALSE(budget.admitted);
  EXPECT_EQ(budget.binding_cap, BudgetCap::kConfigured);
  EXPECT_NE(budget.reason.find("refused by the budget cap"), std::string::npos);
}

}  // namespace
}  // namespace ramguard
