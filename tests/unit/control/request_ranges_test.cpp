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
  EXPECT_TRUE(check_request_ranges(mark).ok());
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
