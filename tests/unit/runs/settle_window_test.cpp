// A run's settle window: the open boundary's floor is the lowest RSS from its round-end mark to
// the window's end, the window is due `settle` after the mark, a teardown settles it where the
// readings still count, and trimming keeps the boundary that is settling.
#include "runs/settle_window.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/clock.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class SettleWindowTest : public ::testing::Test {
 protected:
  SettleWindowTest() {
    params_.settle = seconds(3);
    params_.held_boundaries = 2;
  }

  MemoryReading reading(std::uint64_t rss_bytes) const {
    MemoryReading r;
    r.at = clock_.now();
    r.rss_bytes = rss_bytes;
    r.anon_bytes = rss_bytes;
    return r;
  }
  // A round-end mark at RSS `rss_bytes` opens its boundary's window.
  void round_end(std::uint32_t round, std::uint64_t rss_bytes) {
    BoundaryRecord b;
    b.round = round;
    b.reading = reading(rss_bytes);
    b.floor_bytes = rss_bytes;
    samples_.add(b.reading);
    const BoundaryRecord& opened = window_.open(b);
    EXPECT_EQ(opened.round, round);
    EXPECT_EQ(window_.settling(), ledger_.boundaries.size() - 1);
  }
  void sample(std::chrono::nanoseconds after, std::uint64_t rss_bytes) {
    clock_.advance(after);
    samples_.add(reading(rss_bytes));
  }

  FakeClock clock_;
  RunParams params_;
  RunLedger ledger_;
  DetectorParams detectors_;
  SampleSeries samples_;
  SettleWindow window_{ledger_, params_};
};

TEST_F(SettleWindowTest, FloorIsTheLowestReadingInTheWindow) {
  round_end(1, 5 * kGB);
  const Instant mark_at = clock_.now();
  sample(seconds(1), 4 * kGB);
  sample(seconds(1), 4 * kGB + kGB / 2);
  EXPECT_FALSE(window_.due_by(clock_.now()));
  sample(seconds(1), 4 * kGB + kGB / 4);
  ASSERT_TRUE(window_.due().has_value());
  EXPECT_EQ(window_.due()->monotonic - mark_at.monotonic, seconds(3));
  EXPECT_TRUE(window_.due_by(clock_.now()));
  const Instant end = clock_.now();
  sample(seconds(1), 3 * kGB);  // after the window: not this round's floor
  ASSERT_TRUE(window_.close(0));
  EXPECT_FALSE(window_.settling().has_value());
  const BoundaryRecord& b = window_.settle(0, end, samples_, true, detectors_);
  EXPECT_EQ(b.floor_bytes, 4 * kGB);
  EXPECT_TRUE(b.settled);
  EXPECT_TRUE(b.window_complete);
  EXPECT_FALSE(window_.close(0));  // settled once
}

TEST_F(SettleWindowTest, FloorIsNeverAboveTheMark) {
  round_end(1, 2 * kGB);
  sample(seconds(1), 3 * kGB);
  ASSERT_TRUE(window_.close(0));
  EXPECT_EQ(window_.settle(0, clock_.now(), samples_, true, detectors_).floor_bytes, 2 * kGB);
}

TEST_F(SettleWindowTest, TeardownCutsTheWindowWhereReadingsStillCount) {
  round_end(1, 5 * kGB);
  const Instant mark_at = clock_.now();
  sample(seconds(1), 4 * kGB);
  // An end 1 s in: the readings up to it; an exit: the mark's reading alone.
  auto at_end = window_.before_teardown(clock_.now(), /*readings_until_cut=*/true, true);
  ASSERT_TRUE(at_end.has_value());
  EXPECT_EQ(at_end->at.monotonic, clock_.now().monotonic);
  EXPECT_FALSE(at_end->full_window);
  auto at_exit = window_.before_teardown(clock_.now(), /*readings_until_cut=*/false, true);
  ASSERT_TRUE(at_exit.has_value());
  EXPECT_EQ(at_exit->at.monotonic, mark_at.monotonic);
  // A cut after the window ran its length: at its end, full when the run is live.
  clock_.advance(seconds(5));
  auto late = window_.before_teardown(clock_.now(), true, /*active=*/true);
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->at.monotonic - mark_at.monotonic, seconds(3));
  EXPECT_TRUE(late->full_window);
  EXPECT_FALSE(window_.before_teardown(clock_.now(), true, /*active=*/false)->full_window);
}

TEST_F(SettleWindowTest, NothingIsDueWithoutAnOpenWindow) {
  EXPECT_FALSE(window_.due().has_value());
  EXPECT_FALSE(window_.due_by(clock_.now()));
  EXPECT_FALSE(window_.before_teardown(clock_.now(), true, true).has_value());
}

TEST_F(SettleWindowTest, TrimKeepsTheSettlingBoundary) {
  for (std::uint32_t round = 1; round <= 3; ++round) {
    round_end(round, kGB);
    ASSERT_TRUE(window_.close(round - 1));
    window_.settle(round - 1, clock_.now(), samples_, true, detectors_);
    sample(seconds(4), kGB);
  }
  round_end(4, kGB);  // settling: index 3 of 4
  window_.trim(/*exact=*/true);
  ASSERT_EQ(ledger_.boundaries.size(), 2u);
  EXPECT_EQ(ledger_.earlier_boundaries.count, 2u);
  ASSERT_TRUE(window_.settling().has_value());
  EXPECT_EQ(ledger_.boundaries[*window_.settling()].round, 4u);
}

TEST_F(SettleWindowTest, JudgesGrowthOnSettledFloors) {
  std::vector<Verdict> said;
  for (std::uint32_t round = 1; round <= 8; ++round) {
    round_end(round, kGB * round);  // a gigabyte more held at every round
    ASSERT_TRUE(window_.close(round - 1));
    window_.settle(round - 1, clock_.now(), samples_, true, detectors_);
    for (Verdict& v : window_.judge_growth(detectors_)) said.push_back(std::move(v));
    sample(seconds(4), kGB * round);
  }
  const auto growth = std::count_if(said.begin(), said.end(), [](const Verdict& v) {
    return v.kind == verdict_kind::kGrowthWarning || v.kind == verdict_kind::kLeak;
  });
  EXPECT_GE(growth, 1);
  // Nothing new: no verdict said again.
  EXPECT_TRUE(window_.judge_growth(detectors_).empty());
}

}  // namespace
}  // namespace ramguard::test
