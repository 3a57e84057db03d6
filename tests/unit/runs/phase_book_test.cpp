// A run's phase book: open phases nest and close, a phase name's largest peak becomes the
// yardstick's earlier peak, names are bounded, forecasts and gaps are said once, and ended
// phases past the held count fold into totals.
#include "runs/phase_book.hpp"

#include <gtest/gtest.h>

#include "common/clock.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::seconds;

// Aggregation holds global 1 + host updates (2 hosts) + result 1 = 4 model copies.
MemoryPlan fedavg() {
  return {
      "fedavg",
      {{"load", {{"global", 1, false}}},
       {"aggregation", {{"global", 1, false}, {"host_updates", 1, true}, {"result", 1, false}}}},
      0};
}

class PhaseBookTest : public ::testing::Test {
 protected:
  PhaseBookTest() {
    params_.max_phase_names = 3;
    params_.held_phases = 16;
    params_.plans["fedavg"] = fedavg();
    ledger_.info.run_id = "r-book";
    ledger_.info.plan = "fedavg";
    ledger_.info.model_bytes = kGB;
    ledger_.info.hosts = 2;
    ledger_.info.estimate_bytes = 4 * kGB;
    ledger_.baseline.rss_bytes = 2 * kGB;
    ledger_.baseline.anon_bytes = 2 * kGB;
    detectors_.budget_bytes = 5 * kGB;  // baseline 2 + aggregation 4 = 6 GB > 5 GB
  }

  PhaseRecord& begin(const std::string& name) {
    EXPECT_TRUE(book_.can_begin(name).ok()) << name;
    PhaseRecord phase;
    phase.phase = name;
    phase.begin = clock_.now();
    return book_.begin(std::move(phase));
  }

  FakeClock clock_;
  RunParams params_;
  RunLedger ledger_;
  DetectorParams detectors_;
  PhaseBook book_{ledger_, params_};
};

TEST_F(PhaseBookTest, NestedPhasesOpenAndClose) {
  begin("round");
  begin("aggregation");
  EXPECT_EQ(book_.current(), "aggregation");
  EXPECT_EQ(book_.open_names(), "round, aggregation");
  EXPECT_FALSE(book_.can_begin("round").ok());  // already open
  EXPECT_FALSE(book_.can_end("load").ok());     // never begun
  book_.fold_peak(3 * kGB);
  clock_.advance(seconds(5));
  const PhaseRecord& ended = book_.end("aggregation", clock_.now());
  EXPECT_EQ(ended.peak_bytes, 3 * kGB);
  ASSERT_TRUE(ended.end.has_value());
  EXPECT_EQ(book_.current(), "round");
  EXPECT_EQ(book_.open().size(), 1u);
  const auto closed = book_.close_all(clock_.now());
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0]->phase, "round");
  EXPECT_EQ(book_.open_names(), "none");
  EXPECT_EQ(book_.current(), "");
}

TEST_F(PhaseBookTest, BoundsItsPhaseNames) {
  for (const char* name : {"load", "aggregation", "save"}) {
    begin(name);
    book_.end(name, clock_.now());
  }
  const Status fourth = book_.can_begin("step_17");
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().kind, ErrorKind::kResourceExhausted);
  EXPECT_TRUE(book_.can_begin("load").ok());  // a name already used is no new name
}

TEST_F(PhaseBookTest, SaysAForecastOncePerPhase) {
  begin("aggregation");
  const auto first =
      book_.forecasts("aggregation", 1, std::nullopt, 2 * kGB, clock_.now(), detectors_);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, "over_budget");
  book_.end("aggregation", clock_.now());
  begin("aggregation");
  EXPECT_TRUE(
      book_.forecasts("aggregation", 2, std::nullopt, 2 * kGB, clock_.now(), detectors_).empty());
}

// The node's room changes as the run goes: each begin is checked, each phase, cap and kind is
// said once.
TEST_F(PhaseBookTest, SaysARoomForecastOncePerPhaseCapAndKind) {
  detectors_.budget_bytes = 16 * kGB;            // the budget has room: only the node's is short
  const PhaseRoom tight{kGB, std::nullopt, {}};  // 4 GB still to add, 1 GB available
  const auto first = book_.forecasts("aggregation", 1, tight, 2 * kGB, clock_.now(), detectors_);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].figures.at("cap_node"), 1);
  EXPECT_TRUE(book_.forecasts("aggregation", 2, tight, 2 * kGB, clock_.now(), detectors_).empty());
  // Another phase short of the same room is said of too.
  const PhaseRoom tighter{kGB / 4, std::nullopt, {}};
  EXPECT_EQ(book_.forecasts("load", 2, tighter, 2 * kGB, clock_.now(), detectors_).size(), 1u);
}

TEST_F(PhaseBookTest, YardstickKeepsTheLargestEndedPeak) {
  auto& first = begin("aggregation");
  first.peak_bytes = 7 * kGB;
  book_.end("aggregation", clock_.now());
  auto& second = begin("aggregation");
  second.peak_bytes = 6 * kGB;
  book_.end("aggregation", clock_.now());
  const auto y = book_.yardstick("aggregation");
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->earlier_peak_bytes, 7 * kGB);
  EXPECT_EQ(y->plan_bytes, 6 * kGB);  // baseline 2 + 4 model copies
}

TEST_F(PhaseBookTest, ChecksEachNameAgainstThePlanOnce) {
  EXPECT_FALSE(book_.plan_warning("eval").empty());
  EXPECT_TRUE(book_.plan_warning("eval").empty());
  EXPECT_TRUE(book_.plan_warning("load").empty());
}

TEST_F(PhaseBookTest, ReportsAGapOnceUntilItsMarkIsForgotten) {
  const Instant from = clock_.now();
  EXPECT_TRUE(book_.gap_first(0, from));
  EXPECT_FALSE(book_.gap_first(0, from));
  EXPECT_TRUE(book_.gap_first(1, from));  // another rule
  clock_.advance(seconds(1));
  book_.forget_gaps_before(clock_.now());
  EXPECT_TRUE(book_.gap_first(0, from));
}

TEST_F(PhaseBookTest, TrimsEndedPhasesButKeepsOpenOnes) {
  begin("load");  // open through the run
  for (int i = 0; i < 20; ++i) {
    begin("aggregation");
    book_.end("aggregation", clock_.now());
  }
  book_.trim(/*exact=*/true);
  EXPECT_EQ(ledger_.phases.size(), 16u);
  EXPECT_EQ(ledger_.earlier_phases, 5u);
  EXPECT_EQ(ledger_.earlier_phase_totals.at("aggregation").count, 5u);
  ASSERT_EQ(book_.open().size(), 1u);
  EXPECT_EQ(ledger_.phases[book_.open()[0]].phase, "load");
  EXPECT_EQ(book_.current(), "load");
}

}  // namespace
}  // namespace ramguard::test
