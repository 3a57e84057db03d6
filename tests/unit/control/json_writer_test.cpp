// The fast reply printer prints exactly what protobuf's JSON printer prints (with
// always_print_primitive_fields), and declines what it cannot reproduce.
#include "control/json_writer.hpp"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "ramguard.pb.h"

namespace ramguard::control {
namespace {

std::string protobuf_json(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out, options).ok());
  return out;
}

v1::Reply status_reply() {
  v1::Reply reply;
  reply.set_version(1);
  reply.set_request_id("id \"quoted\" \\ back");
  reply.set_server_version("0.1.0");
  auto* status = reply.mutable_status();
  status->set_budget_bytes(16'000'000'000u);
  status->set_store_available(true);
  auto* run = status->add_runs();
  run->set_run_id("r-1");
  (*run->mutable_labels())["build"] = "final";
  run->set_pid(4242);
  run->mutable_baseline()->set_rss_bytes(123456789);
  run->mutable_baseline()->set_at_unix_ms(-5);
  for (const double d : {0.0, 0.1, 1.0 / 3.0, 0.008295495, 1e21, 123456.789, -2.5e-7}) {
    auto* phase = run->add_phases();
    phase->set_phase("aggregation");
    phase->set_begin_seconds(d);
    phase->set_duration_seconds(d * 7);
  }
  auto* boundary = run->add_boundaries();
  boundary->set_round(3);
  boundary->mutable_gc()->set_rss_before_bytes(5);
  auto* verdict = run->add_verdicts();
  verdict->set_severity(v1::WARNING);
  (*verdict->mutable_figures())["slope_bytes_per_round"] = 1.5e9;
  auto* gap = run->add_gaps();
  gap->set_rule("aggregation.end -> synchronization.begin <&>");
  gap->set_over(true);
  status->add_reservations()->set_job("vit");
  return reply;
}

TEST(JsonWriter, PrintsWhatProtobufPrints) {
  for (const v1::Reply& reply : {status_reply(), v1::Reply{}}) {
    std::string fast;
    ASSERT_TRUE(append_json(reply, fast));
    EXPECT_EQ(fast, protobuf_json(reply));
  }
  v1::Reply error;
  error.mutable_error()->set_code(v1::Error::INVALID_ARGUMENT);
  error.mutable_error()->set_message("admit.pid 4294967295 is out of range");
  std::string fast;
  ASSERT_TRUE(append_json(error, fast));
  EXPECT_EQ(fast, protobuf_json(error));
}

TEST(JsonWriter, DeclinesWhatItCannotReproduce) {
  v1::Reply reply;
  reply.set_request_id("caf\xc3\xa9");
  std::string out;
  EXPECT_FALSE(append_json(reply, out));
  reply.set_request_id("tab\there");
  out.clear();
  EXPECT_FALSE(append_json(reply, out));
}

}  // namespace
}  // namespace ramguard::control
