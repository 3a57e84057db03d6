// A run's release check: quick readings at 50 ms doubling to 1.6 s after the end, a deadline
// that is the earlier of the next of them and the grace's end, and one verdict once the
// readings after the end decide it.
#include "runs/release_check.hpp"

#include <gtest/gtest.h>

#include "common/clock.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ReleaseCheckTest : public ::testing::Test {
 protected:
  ReleaseCheckTest() {
    ledger_.baseline = reading(2 * kGB);
    detectors_.release_grace_seconds = 30;
    detectors_.release_slack_bytes = kGB / 2;
  }

  MemoryReading reading(std::uint64_t rss_bytes) const {
    MemoryReading r;
    r.at = clock_.now();
    r.rss_bytes = rss_bytes;
    r.anon_bytes = rss_bytes;
    return r;
  }
  void end_run() {
    ledger_.state = RunState::kEnded;
    ledger_.ended = clock_.now();
    ended_ = clock_.now();
  }
  static Instant after(Instant at, std::chrono::nanoseconds d) {
    at.monotonic += d;
    at.wall += d;
    return at;
  }
  static std::chrono::nanoseconds since(Instant start, Instant at) {
    return at.monotonic - start.monotonic;
  }

  FakeClock clock_;
  RunLedger ledger_;
  DetectorParams detectors_;
  SampleSeries samples_;
  ReleaseCheck release_{ledger_};
  Instant ended_;
};

TEST_F(ReleaseCheckTest, NothingIsDueBeforeTheEnd) {
  EXPECT_FALSE(release_.pending());
  EXPECT_FALSE(release_.next_read().has_value());
  EXPECT_FALSE(release_.next_deadline(detectors_).has_value());
  EXPECT_FALSE(release_.take_due_reads(clock_.now()));
}

TEST_F(ReleaseCheckTest, QuickReadsDoubleFrom50msTo1600ms) {
  end_run();
  ASSERT_TRUE(release_.next_read().has_value());
  EXPECT_EQ(since(ended_, *release_.next_read()), milliseconds(50));
  EXPECT_FALSE(release_.take_due_reads(after(clock_.now(), milliseconds(40))));
  // 50, 100 and 200 ms are all due at 250 ms: the next is at 400 ms.
  EXPECT_TRUE(release_.take_due_reads(after(ended_, milliseconds(250))));
  EXPECT_EQ(since(ended_, *release_.next_read()), milliseconds(400));
  EXPECT_TRUE(release_.take_due_reads(after(ended_, milliseconds(1600))));
  EXPECT_FALSE(release_.next_read().has_value());  // then the periodic sampler
  EXPECT_FALSE(release_.take_due_reads(after(ended_, seconds(10))));
}

TEST_F(ReleaseCheckTest, DeadlineIsTheNextReadThenTheGrace) {
  end_run();
  ASSERT_TRUE(release_.next_deadline(detectors_).has_value());
  EXPECT_EQ(since(ended_, *release_.next_deadline(detectors_)), milliseconds(50));
  release_.take_due_reads(after(ended_, seconds(2)));
  ASSERT_TRUE(release_.next_deadline(detectors_).has_value());
  EXPECT_EQ(since(ended_, *release_.next_deadline(detectors_)), seconds(30));
  release_.decide();
  EXPECT_FALSE(release_.next_deadline(detectors_).has_value());
}

TEST_F(ReleaseCheckTest, HeldMemoryStaysPendingWithinTheGrace) {
  end_run();
  clock_.advance(seconds(1));
  samples_.add(reading(4 * kGB));  // 2 GB over the baseline, past the slack
  EXPECT_FALSE(release_.check(clock_.now(), samples_, seconds(3), detectors_).has_value());
  EXPECT_TRUE(release_.pending());
}

TEST_F(ReleaseCheckTest, DecidesOnceWhenMemoryReturns) {
  end_run();
  clock_.advance(milliseconds(200));
  samples_.add(reading(2 * kGB + kGB / 4));  // within the slack
  auto verdict = release_.check(clock_.now(), samples_, seconds(3), detectors_);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "release");
  EXPECT_TRUE(verdict->passed);
  EXPECT_TRUE(release_.decided());
  EXPECT_FALSE(release_.pending());
  EXPECT_FALSE(release_.check(clock_.now(), samples_, seconds(3), detectors_).has_value());
}

TEST_F(ReleaseCheckTest, FailsWhenMemoryIsHeldPastTheGrace) {
  end_run();
  clock_.advance(seconds(31));
  samples_.add(reading(4 * kGB));
  auto verdict = release_.check(clock_.now(), samples_, seconds(3), detectors_);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_FALSE(verdict->passed);
}

}  // namespace
}  // namespace ramguard::test
