// The fleet peak query: the PromQL sent and the answers read back (real Prometheus answers are
// in tests/e2e/fleet_e2e_test.cpp).
#include "fleet/peak_query.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleet/http_get.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;

TEST(PeakQuery, ThePromqlMatchesTheJobExactlyOverTheLookback) {
  EXPECT_EQ(peak_promql("fedavg", std::chrono::hours(24 * 30)),
            "max by (uid, node, instance) (max_over_time(ramguard_job_peak_bytes{ramguard_job="
            "\"fedavg\"}[2592000s]))");
  // A job name cannot end the string or the selector.
  EXPECT_THAT(peak_promql("a\"}or vector(1e30)#\\", std::chrono::hours(1)),
              HasSubstr("{ramguard_job=\"a\\\"}or vector(1e30)#\\\\\"}"));
  EXPECT_EQ(query_target("up{a=\"b c\"}"), "/api/v1/query?query=up%7Ba%3D%22b%20c%22%7D");
}

TEST(PeakQuery, AVectorAnswerGivesOnePeakPerOwnerAndNode) {
  const std::string body = R"({"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"uid":"1000","node":"node-a","instance":"a:9797"},"value":[1.7e9,"7900000000"]},
    {"metric":{"uid":"0","instance":"b:9797"},"value":[1.7e9,"1e9"]},
    {"metric":{"node":"node-c"},"value":[1.7e9,"5"]},
    {"metric":{"uid":"7","node":"node-d"},"value":[1.7e9,"NaN"]}]}})";
  auto peaks = parse_peak_reply(body);
  ASSERT_TRUE(peaks.ok()) << peaks.error().message;
  ASSERT_EQ(peaks->size(), 2u);  // no uid, and not a number: skipped
  EXPECT_EQ((*peaks)[0].uid, 1000u);
  EXPECT_EQ((*peaks)[0].node, "node-a");
  EXPECT_EQ((*peaks)[0].peak_bytes, 7'900'000'000u);
  EXPECT_EQ((*peaks)[1].node, "b:9797");  // no node label: the instance
  EXPECT_EQ((*peaks)[1].peak_bytes, 1'000'000'000u);
}

TEST(PeakQuery, FailedOrOddAnswersAreErrorsThatSayWhy) {
  EXPECT_THAT(parse_peak_reply("<html>").error().message, HasSubstr("not JSON"));
  EXPECT_THAT(parse_peak_reply(R"({"status":"error","errorType":"bad_data","error":"parse error"})")
                  .error()
                  .message,
              HasSubstr("the query failed: parse error"));
  EXPECT_THAT(parse_peak_reply(R"({"status":"success","data":{"resultType":"matrix","result":[]}})")
                  .error()
                  .message,
              HasSubstr("not an instant vector"));
  auto empty =
      parse_peak_reply(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(HttpReply, StatusAndBodyAreSplitAndChunkedBodiesRefused) {
  auto reply = parse_http_reply("HTTP/1.0 503 Service Unavailable\r\nA: b\r\n\r\nbusy");
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->status, 503);
  EXPECT_EQ(reply->body, "busy");
  EXPECT_THAT(parse_http_reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n")
                  .error()
                  .message,
              HasSubstr("chunked"));
  EXPECT_FALSE(parse_http_reply("SSH-2.0").ok());
  EXPECT_FALSE(parse_http_reply("HTTP/1.0 200 OK\r\nno end").ok());
}

}  // namespace
}  // namespace ramguard
