// A mark's time: dropped after its client's deadline, recorded at the client's time otherwise,
// never before the run's previous mark nor after it was read.
#include "runs/mark_time.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

const Instant kNow{seconds(1000), seconds(1'700'000'000)};

TEST(MarkTime, AMarkReadAfterItsDeadlineIsDroppedNamingHowLate) {
  auto late = check_mark_times(std::nullopt, kNow.wall - milliseconds(4950), kNow);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().kind, ErrorKind::kDeadlineExceeded);
  EXPECT_THAT(late.error().message, HasSubstr("4950 ms after its client's deadline"));
  EXPECT_TRUE(check_mark_times(std::nullopt, kNow.wall, kNow).ok());
  EXPECT_TRUE(check_mark_times(std::nullopt, std::nullopt, kNow).ok());
}

TEST(MarkTime, AClientTimeFarAheadOfTheDaemonsClockIsRefused) {
  EXPECT_TRUE(check_mark_times(kNow.wall + milliseconds(900), std::nullopt, kNow).ok());
  auto ahead = check_mark_times(kNow.wall + seconds(5), std::nullopt, kNow);
  ASSERT_FALSE(ahead.ok());
  EXPECT_EQ(ahead.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_THAT(ahead.error().message, HasSubstr("5000 ms ahead"));
}

TEST(MarkTime, TheMarkIsDatedAtTheClientsTimeWithinThePreviousMarkAndTheReading) {
  const Instant previous{kNow.monotonic - seconds(10), kNow.wall - seconds(10)};
  // No client time: when it was read.
  EXPECT_EQ(mark_instant(kNow, std::nullopt, previous).wall, kNow.wall);
  // 25 ms ago in the client: both clocks move back 25 ms.
  const Instant sent = mark_instant(kNow, kNow.wall - milliseconds(25), previous);
  EXPECT_EQ(sent.wall, kNow.wall - milliseconds(25));
  EXPECT_EQ(sent.monotonic, kNow.monotonic - milliseconds(25));
  // Before the previous mark: at the previous mark, so marks stay in order.
  EXPECT_EQ(mark_instant(kNow, kNow.wall - seconds(60), previous).monotonic, previous.monotonic);
  // Slightly ahead (clock resolution): when it was read, never later.
  EXPECT_EQ(mark_instant(kNow, kNow.wall + milliseconds(3), previous).wall, kNow.wall);
}

}  // namespace
}  // namespace ramguard::test
