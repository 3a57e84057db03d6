// libprotobuf's own log lines go through the structured log, a bounded number a minute.
#include "control/protobuf_log.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/log.hpp"
#include "ramguard.pb.h"

namespace ramguard::control {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

std::vector<std::string> g_lines;
void capture(const std::string& line) {
  g_lines.push_back(line);
}

TEST(LinesPerMinute, AdmitsTheBudgetThenCountsWhatItDropsUntilTheNextMinute) {
  LinesPerMinute budget(3);
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(100);
  std::uint64_t suppressed = 99;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(budget.admit(t0 + seconds(i), suppressed));
    EXPECT_EQ(suppressed, 0u);
  }
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(budget.admit(t0 + seconds(10), suppressed));
  EXPECT_FALSE(budget.admit(t0 + seconds(59), suppressed));
  EXPECT_TRUE(budget.admit(t0 + seconds(60), suppressed));  // a new minute
  EXPECT_EQ(suppressed, 6u);
  EXPECT_TRUE(budget.admit(t0 + seconds(61), suppressed));
  EXPECT_EQ(suppressed, 0u);
}

TEST(ProtobufLog, AFloodOfProtobufErrorsBecomesAFewEscapedStructuredLines) {
  g_lines.clear();
  log::set_sink(&capture);
  route_protobuf_log();
  v1::Error error;
  error.set_message("bad \xff bytes");  // serializing logs "contains invalid UTF-8 data"
  for (int i = 0; i < 200; ++i) (void)error.SerializeAsString();
  log::set_sink(nullptr);
  ASSERT_FALSE(g_lines.empty()) << "protobuf logged nothing through the handler";
  EXPECT_LE(g_lines.size(), kProtobufLinesPerMinute);
  for (const std::string& line : g_lines) {
    EXPECT_THAT(line, HasSubstr("event=protobuf.log"));
    EXPECT_THAT(line, HasSubstr("invalid UTF-8"));
  }
}

}  // namespace
}  // namespace ramguard::control
