// Numbers out of range are refused at the protocol boundary, naming the field.
#include "control/request_ranges.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace ramguard::control {
namespace {

using ::testing::HasSubstr;

std::string refusal(const v1::Request& r) {
  const Status s = check_request_ranges(r);
  EXPECT_FALSE(s.ok());
  return s.ok() ? std::string() : s.error().message;
}

TEST(RequestRanges, RealFiguresPass) {
  v1::Request admit;
  admit.mutable_admit()->set_hosts(512);
  admit.mutable_admit()->mutable_model()->set_parameter_count(70'000'000'000);
  admit.mutable_admit()->mutable_model()->set_bytes_per_parameter(2);
  EXPECT_TRUE(check_request_ranges(admit).ok());
  v1::Request mark;
  mark.mutable_mark()->mutable_gc()->set_rss_before_bytes(26'000'000'000);
  mark.mutable_mark()->mutable_gc()->set_rss_after_bytes(27'000'000'000);  // rose during gc
  mark.mutable_mark()->mutable_gc()->set_duration_seconds(0.8);
  EXPECT_TRUE(check_request_ranges(mark, 64'000'000'000).ok());
}

// "gc.collect() freed 1000000.00 GB": under the 1 PB bound, but above any node's memory.
TEST(RequestRanges, AProbeLargerThanTheNodesMemoryIsRefused) {
  v1::Request r;
  r.mutable_mark()->mutable_gc()->set_rss_before_bytes(1'000'000'000'000'000);
  r.mutable_mark()->mutable_gc()->set_rss_after_bytes(1'000'000'000);
  const std::string why = [&] {
    const Status s = check_request_ranges(r, 64'000'000'000);
    return s.ok() ? std::string() : s.error().message;
  }();
  EXPECT_THAT(why, HasSubstr("mark.gc.rssBeforeBytes 1000000000000000 is out of range"));
  EXPECT_THAT(why, HasSubstr("this node's memory"));
  r.Clear();
  r.mutable_run_end()->mutable_trim()->set_rss_after_bytes(65'000'000'000);
  EXPECT_FALSE(check_request_ranges(r, 64'000'000'000).ok());
  EXPECT_GT(physical_memory_bytes(), 0u);  // the daemon's own bound is this machine's
}

// 2^63-1 us converted to nanoseconds wraps negative: the check must come before it.
TEST(RequestRanges, ATimeBeyondWhatNanosecondsHoldIsRefused) {
  v1::Request r;
  r.mutable_mark()->set_at_unix_us(std::numeric_limits<std::int64_t>::max());
  EXPECT_THAT(refusal(r), HasSubstr("mark.atUnixUs 9223372036854775807 is out of range"));
  r.mutable_mark()->set_at_unix_us(kMaxUnixUs);
  EXPECT_TRUE(check_request_ranges(r).ok());  // the daemon's clock check refuses it later
}

TEST(RequestRanges, LongIdentifiersAreRefusedBeforeAnyUse) {
  const std::string long_id(60'000, 'x');
  v1::Request r;
  r.mutable_mark()->set_run_id(long_id);
  EXPECT_THAT(refusal(r), HasSubstr("mark.runId of 60000 bytes is out of range: at most 64"));
  r.Clear();
  r.mutable_mark()->set_phase(std::string(65, 'p'));
  EXPECT_THAT(refusal(r), HasSubstr("mark.phase"));
  r.Clear();
  r.mutable_run_end()->set_run_id(long_id);
  EXPECT_THAT(refusal(r), HasSubstr("runEnd.runId"));
  r.Clear();
  r.mutable_release()->set_reservation_id(long_id);
  EXPECT_THAT(refusal(r), HasSubstr("release.reservationId"));
  r.Clear();
  r.mutable_report()->set_run_id(long_id);
  EXPECT_THAT(refusal(r), HasSubstr("report.runId"));
  r.Clear();
  r.mutable_compare()->add_run_ids("r-ok");
  r.mutable_compare()->add_run_ids(long_id);
  EXPECT_THAT(refusal(r), HasSubstr("compare.runIds"));
  r.Clear();
  r.mutable_status()->set_run_id("r-20261204-184500-a1b2c3");
  EXPECT_TRUE(check_request_ranges(r).ok());
}

TEST(RequestRanges, EachAbsurdFigureIsNamed) {
  v1::Request r;
  r.mutable_admit()->set_hosts(4'294'967'295u);
  EXPECT_THAT(refusal(r), HasSubstr("admit.hosts 4294967295 is out of range: at most 1000000"));

  r.Clear();
  r.mutable_run_start()->set_model_bytes(18'400'000'000'000'000'000u);
  EXPECT_THAT(refusal(r), HasSubstr("runStart.modelBytes 18400000000000000000"));

  r.Clear();
  r.mutable_admit()->mutable_model()->set_bytes_per_parameter(
      std::numeric_limits<double>::infinity());
  EXPECT_THAT(refusal(r), HasSubstr("admit.model.bytesPerParameter (not finite)"));

  r.Clear();
  r.mutable_run_end()->mutable_trim()->set_duration_seconds(-1);
  EXPECT_THAT(refusal(r), HasSubstr("runEnd.trim.durationSeconds"));

  r.Clear();
  r.mutable_mark()->mutable_allocator()->set_retained_bytes(
      std::numeric_limits<std::uint64_t>::max());
  EXPECT_THAT(refusal(r), HasSubstr("mark.allocator.retainedBytes"));

  r.Clear();
  r.mutable_run_start()->set_declared_rounds(4'000'000'000u);
  EXPECT_THAT(refusal(r), HasSubstr("runStart.declaredRounds"));
}

}  // namespace
}  // namespace ramguard::control
