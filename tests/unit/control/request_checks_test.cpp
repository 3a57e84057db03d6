// Requests that break a rule (a range, a length, an alphabet, an enum) are refused at the
// protocol boundary, before any handler, naming the field or the rule.
#include "control/request_checks.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace ramguard::control {
namespace {

using ::testing::HasSubstr;

std::string refusal(const v1::Request& r) {
  const Status s = check_request(r);
  EXPECT_FALSE(s.ok());
  return s.ok() ? std::string() : s.error().message;
}

TEST(RequestChecks, RealFiguresPass) {
  v1::Request admit;
  admit.mutable_admit()->set_hosts(512);
  admit.mutable_admit()->mutable_model()->set_parameter_count(70'000'000'000);
  admit.mutable_admit()->mutable_model()->set_bytes_per_parameter(2);
  EXPECT_TRUE(check_request(admit).ok());
  v1::Request mark;
  mark.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  mark.mutable_mark()->mutable_gc()->set_rss_before_bytes(26'000'000'000);
  mark.mutable_mark()->mutable_gc()->set_rss_after_bytes(27'000'000'000);  // rose during gc
  mark.mutable_mark()->mutable_gc()->set_duration_seconds(0.8);
  EXPECT_TRUE(check_request(mark, 64'000'000'000).ok());
}

// "gc.collect() freed 1000000.00 GB": under the 1 PB bound, but above any node's memory.
TEST(RequestChecks, AProbeLargerThanTheNodesMemoryIsRefused) {
  v1::Request r;
  r.mutable_mark()->mutable_gc()->set_rss_before_bytes(1'000'000'000'000'000);
  r.mutable_mark()->mutable_gc()->set_rss_after_bytes(1'000'000'000);
  const std::string why = [&] {
    const Status s = check_request(r, 64'000'000'000);
    return s.ok() ? std::string() : s.error().message;
  }();
  EXPECT_THAT(why, HasSubstr("mark.gc.rssBeforeBytes 1000000000000000 is out of range"));
  EXPECT_THAT(why, HasSubstr("this node's memory"));
  r.Clear();
  r.mutable_run_end()->mutable_trim()->set_rss_after_bytes(65'000'000'000);
  EXPECT_FALSE(check_request(r, 64'000'000'000).ok());
  EXPECT_GT(physical_memory_bytes(), 0u);  // the daemon's own bound is this machine's
}

// 2^63-1 us converted to nanoseconds wraps negative: the check must come before it.
TEST(RequestChecks, ATimeBeyondWhatNanosecondsHoldIsRefused) {
  v1::Request r;
  r.mutable_mark()->set_at_unix_us(std::numeric_limits<std::int64_t>::max());
  EXPECT_THAT(refusal(r), HasSubstr("mark.atUnixUs 9223372036854775807 is out of range"));
  r.mutable_mark()->set_at_unix_us(kMaxUnixUs);
  r.mutable_mark()->set_kind(v1::MarkRequest::PHASE_BEGIN);
  EXPECT_TRUE(check_request(r).ok());  // the daemon's clock check refuses it later
}

TEST(RequestChecks, LongIdentifiersAreRefusedBeforeAnyUse) {
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
  EXPECT_TRUE(check_request(r).ok());
}

TEST(RequestChecks, EachAbsurdFigureIsNamed) {
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

// The rules on texts and enums live here too, not in the handlers: one place to read them.
TEST(RequestChecks, TextAndEnumRulesAreCheckedBeforeAnyHandler) {
  v1::Request r;
  r.mutable_run_start()->set_job("fedavg\x1b[2J");
  EXPECT_THAT(refusal(r), HasSubstr("job name contains a control character"));
  r.Clear();
  r.mutable_admit()->set_job(std::string(protocol::kMaxJobBytes + 1, 'j'));
  EXPECT_THAT(refusal(r), HasSubstr("job name is longer than"));
  r.Clear();
  r.mutable_admit()->set_allocator("Glibc 2.36");
  EXPECT_THAT(refusal(r), HasSubstr("admit: allocator must be [a-z0-9_.-]{0,32}"));
  r.Clear();
  for (std::size_t i = 0; i <= protocol::kMaxLabels; ++i) {
    (*r.mutable_run_start()->mutable_labels())["k" + std::to_string(i)] = "v";
  }
  EXPECT_THAT(refusal(r), HasSubstr("labels per run"));
  r.Clear();
  (*r.mutable_run_start()->mutable_labels())[""] = "v";
  EXPECT_THAT(refusal(r), HasSubstr("keys are 1-"));
  r.Clear();
  r.mutable_run_start()->set_cgroup_path(std::string("/sys/fs/cgroup/a\0b", 19));
  EXPECT_THAT(refusal(r), HasSubstr("cgroup_path is a path of at most"));
  r.Clear();
  r.mutable_mark()->set_run_id("r-1");
  EXPECT_THAT(refusal(r), HasSubstr("mark needs a kind"));
  r.mutable_mark()->set_kind(v1::MarkRequest::PHASE_END);
  r.mutable_mark()->mutable_census();
  EXPECT_THAT(refusal(r), HasSubstr("mark.census goes with a ROUND_END only"));
  r.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  r.mutable_mark()->mutable_allocator()->set_resident_bytes(100);
  r.mutable_mark()->mutable_allocator()->set_allocated_bytes(200);
  EXPECT_THAT(refusal(r), HasSubstr("allocator stats contradict themselves: allocated_bytes"));
  r.Clear();
  r.mutable_run_end()->set_failure("line one\nline two");
  EXPECT_THAT(refusal(r), HasSubstr("run end failure contains a control character"));
  r.Clear();
  r.mutable_release();
  EXPECT_THAT(refusal(r), HasSubstr("release needs a reservation id"));
  r.Clear();
  for (std::size_t i = 0; i <= protocol::kMaxCompareRuns; ++i) {
    r.mutable_compare()->add_run_ids("r-" + std::to_string(i));
  }
  EXPECT_THAT(refusal(r), HasSubstr("compare at most"));
}

}  // namespace
}  // namespace ramguard::control
