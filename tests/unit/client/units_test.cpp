// The client's size/duration parsing and formatting, and where the socket is by default.
#include "ramguard/units.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ramguard/socket_path.hpp"
#include "unit/common/units_cases.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;

TEST(ClientParseSize, AcceptsDecimalAndBinaryUnits) {
  const struct {
    const char* text;
    std::uint64_t bytes;
  } cases[] = {
      {"0", 0},
      {"123", 123},
      {"16GB", 16'000'000'000},
      {"16GiB", 16ull << 30},
      {"2.5GB", 2'500'000'000},
      {"2.5 GB", 2'500'000'000},
      {"11.1GB", 11'100'000'000},
      {"512MB", 512'000'000},
      {"512MiB", 512ull << 20},
      {"1kB", 1000},
      {" 16GB ", 16'000'000'000},
      {"1KiB", 1024},
      {"3TB", 3'000'000'000'000},
      {"1TiB", 1ull << 40},
  };
  for (const auto& c : cases) {
    const auto parsed = units::parse_size(c.text);
    ASSERT_TRUE(parsed) << c.text << ": " << parsed.error;
    EXPECT_EQ(*parsed.value, c.bytes) << c.text;
  }
}

TEST(ClientParseSize, RejectsAnythingElseNamingTheText) {
  for (const char* text : {"", "GB", "16gb", "16 g", "16Gb", "-1GB", "1e9", "1.5", "7B", "1KB",
                           "1PB", "1.2.3GB", "16 GiBs", "0x10", "99999999999TB", "+1GB"}) {
    const auto parsed = units::parse_size(text);
    EXPECT_FALSE(parsed) << text;
    EXPECT_THAT(parsed.error, HasSubstr(std::string("'") + text + "'")) << text;
  }
}

TEST(ClientParseDuration, NeedsAUnit) {
  EXPECT_EQ(*units::parse_duration("5s").value, std::chrono::milliseconds(5000));
  EXPECT_EQ(*units::parse_duration("500ms").value, std::chrono::milliseconds(500));
  EXPECT_EQ(*units::parse_duration("1.5m").value, std::chrono::milliseconds(90000));
  EXPECT_EQ(*units::parse_duration("2h").value, std::chrono::milliseconds(7'200'000));
  for (const char* text : {"5", "", "s", "5 sec", "-1s", "5S"}) {
    const auto parsed = units::parse_duration(text);
    EXPECT_FALSE(parsed) << text;
    EXPECT_THAT(parsed.error, HasSubstr("ms, s, m or h")) << text;
  }
}

TEST(ClientParseCount, WholeNumbersWithinTheLimit) {
  EXPECT_EQ(*units::parse_count("42", 100).value, 42u);
  EXPECT_FALSE(units::parse_count("101", 100));
  EXPECT_FALSE(units::parse_count("-1", 100));
  EXPECT_FALSE(units::parse_count("4x", 100));
  EXPECT_THAT(units::parse_count("", 100).error, HasSubstr("0 to 100"));
}

TEST(ClientFormatBytes, DecimalByDefaultAlwaysWithTheUnit) {
  EXPECT_EQ(units::format_bytes(14.1e9), "14.10 GB");
  EXPECT_EQ(units::format_bytes(16.0 * (1ull << 30), true), "16.00 GiB");
  EXPECT_EQ(units::format_seconds(6.75), "6.75 s");
  EXPECT_EQ(units::format_seconds(0.3), "300 ms");
}

// The public API gives what the shared table says (the daemon and Python are held to it too).
TEST(ClientUnits, AgreeWithTheSharedTable) {
  int checked = 0;
  for (const auto& c : testing::read_units_cases()) {
    const std::string at = testing::where(c);
    if (c.kind == "size" || c.kind == "size_rejected") {
      const auto parsed = units::parse_size(c.input);
      if (c.kind == "size") {
        ASSERT_TRUE(parsed) << at << ": " << parsed.error;
        EXPECT_EQ(*parsed.value, testing::number<std::uint64_t>(c.expected)) << at;
      } else {
        EXPECT_FALSE(parsed) << at;
        EXPECT_THAT(parsed.error, HasSubstr("'" + c.input + "'")) << at;
      }
    } else if (c.kind == "duration" || c.kind == "duration_rejected") {
      const auto parsed = units::parse_duration(c.input);
      if (c.kind == "duration") {
        ASSERT_TRUE(parsed) << at << ": " << parsed.error;
        EXPECT_EQ(parsed.value->count(), testing::number<std::int64_t>(c.expected)) << at;
      } else {
        EXPECT_FALSE(parsed) << at;
        EXPECT_THAT(parsed.error, HasSubstr(c.expected)) << at;
      }
    } else if (c.kind == "bytes" || c.kind == "bytes_binary") {
      EXPECT_EQ(units::format_bytes(testing::number<double>(c.input), c.kind == "bytes_binary"),
                c.expected)
          << at;
    } else if (c.kind == "seconds") {
      EXPECT_EQ(units::format_seconds(testing::number<double>(c.input)), c.expected) << at;
    }
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(ClientSocketPath, FollowsTheDocumentedOrder) {
  SocketEnvironment env{"/env/ramguard.sock", "/run/user/1000", 1000};
  EXPECT_EQ(resolve_socket_path("/flag.sock", env), "/flag.sock");
  EXPECT_EQ(resolve_socket_path("", env), "/env/ramguard.sock");
  env.ramguard_socket.reset();
  EXPECT_EQ(resolve_socket_path("", env), "/run/user/1000/ramguard.sock");
  env.xdg_runtime_dir = "";
  EXPECT_EQ(resolve_socket_path("", env), "/tmp/ramguard-1000.sock");
  env.uid = 0;
  env.xdg_runtime_dir = "/run/user/0";
  EXPECT_EQ(resolve_socket_path("", env), "/run/ramguard/ramguard.sock");
}

}  // namespace
}  // namespace ramguard
