// A run's verdict log: every verdict is persisted as it is emitted and handed out in exactly
// one reply; past the held count the oldest replied ones go, keeping the worst of them.
#include "runs/verdict_log.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/clock.hpp"

namespace ramguard::test {
namespace {

class VerdictLogTest : public ::testing::Test {
 protected:
  VerdictLogTest() {
    params_.held_verdicts = 16;
    ledger_.info.run_id = "r-1";
  }

  Verdict verdict(const std::string& kind, Severity severity = Severity::kInfo) {
    Verdict v;
    v.kind = kind;
    v.severity = severity;
    v.at = clock_.now();
    clock_.advance(std::chrono::seconds(1));
    return v;
  }
  void emit(Verdict v, std::vector<Verdict>* out = nullptr) {
    log_.emit(
        std::move(v), [&](const Verdict& p) { persisted_.push_back(p.kind); }, out);
  }

  FakeClock clock_;
  RunParams params_;
  RunLedger ledger_;
  VerdictLog log_{ledger_, params_};
  std::vector<std::string> persisted_;
};

TEST_F(VerdictLogTest, HandsEachVerdictOutOnce) {
  emit(verdict("budget"));
  emit(verdict("runaway"));
  auto first = log_.take_unreplied();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].kind, "budget");
  EXPECT_EQ(first[1].kind, "runaway");
  EXPECT_TRUE(log_.take_unreplied().empty());
  emit(verdict("growth"));
  auto second = log_.take_unreplied();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].kind, "growth");
  EXPECT_EQ(persisted_, (std::vector<std::string>{"budget", "runaway", "growth"}));
  EXPECT_EQ(ledger_.verdicts.size(), 3u);
}

TEST_F(VerdictLogTest, AlsoHandsToAnOutList) {
  std::vector<Verdict> out;
  emit(verdict("phase_gap"), &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, "phase_gap");
}

TEST_F(VerdictLogTest, ResumedVerdictsCountAsReplied) {
  log_.resumed(verdict("budget"));
  log_.resumed(verdict("growth"));
  EXPECT_EQ(log_.replied(), 2u);
  EXPECT_TRUE(log_.take_unreplied().empty());
  EXPECT_TRUE(persisted_.empty());  // read back, not written again
}

TEST_F(VerdictLogTest, KeepsUnrepliedVerdictsUntilTwiceTheHeldCount) {
  for (int i = 0; i < 30; ++i) emit(verdict("runaway"));
  // None went out in a reply: under twice the held count (32) all are kept.
  EXPECT_EQ(ledger_.verdicts.size(), 30u);
  EXPECT_EQ(ledger_.earlier_verdicts, 0u);
  EXPECT_EQ(log_.take_unreplied().size(), 30u);
}

TEST_F(VerdictLogTest, TrimsRepliedVerdictsKeepingTheWorst) {
  emit(verdict("over_budget", Severity::kCritical));
  for (int i = 0; i < 19; ++i) emit(verdict("runaway", Severity::kWarning));
  ASSERT_EQ(log_.take_unreplied().size(), 20u);
  emit(verdict("growth", Severity::kWarning));  // 21 > 16 + 4: down to the held 16
  EXPECT_EQ(ledger_.verdicts.size(), 16u);
  EXPECT_EQ(ledger_.earlier_verdicts, 5u);
  ASSERT_TRUE(ledger_.worst_earlier_verdict.has_value());
  EXPECT_EQ(ledger_.worst_earlier_verdict->kind, "over_budget");
  // The one not yet replied stays and goes out next.
  auto next = log_.take_unreplied();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].kind, "growth");
}

}  // namespace
}  // namespace ramguard::test
