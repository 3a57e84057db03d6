#include "ramguard/base/units.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

TEST(FormatBytesApart, AddsDigitsUntilDifferentSizesReadDifferently) {
  EXPECT_EQ(format_bytes_apart(305e6, 300e6),
            std::make_pair(std::string("0.305 GB"), std::string("0.300 GB")));
  EXPECT_EQ(format_bytes_apart(16.0001e9, 16e9),
            std::make_pair(std::string("16.0001 GB"), std::string("16.0000 GB")));
  EXPECT_EQ(format_bytes_apart(9.6e9, 16e9),
            std::make_pair(std::string("9.60 GB"), std::string("16.00 GB")));
  EXPECT_EQ(format_bytes_apart(5e9, 5e9),
            std::make_pair(std::string("5.00 GB"), std::string("5.00 GB")));
  EXPECT_EQ(format_bytes_apart(50.02e6, 50e6),
            std::make_pair(std::string("50.02 MB"), std::string("50.00 MB")));
}

TEST(ParseSize, AcceptsDecimalBinaryAndPlainBytes) {
  struct Case {
    const char* text;
    std::uint64_t bytes;
  };
  const Case cases[] = {{"16GB", 16'000'000'000ULL},
                        {"16GiB", 16ULL << 30},
                        {"512MB", 512'000'000ULL},
                        {"1kB", 1000},
                        {"4KiB", 4096},
                        {"123", 123},
                        {"2.5GB", 2'500'000'000ULL},
                        {" 8 MiB ", 8ULL << 20},
                        {"0", 0},
                        {"1TB", 1'000'000'000'000ULL}};
  for (const Case& c : cases) {
    auto r = parse_size_bytes(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message;
    EXPECT_EQ(*r, c.bytes) << c.text;
  }
}

TEST(ParseSize, RejectsWithMessageNamingTheText) {
  for (const char* bad : {"", "16g", "16gb", "GB", "-1GB", "1.5", "16 GBs", "1e3MB", "nan GB",
                          "99999999999TB", "12KB"}) {
    auto r = parse_size_bytes(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("size"), std::string::npos) << r.error().message;
  }
  EXPECT_NE(parse_size_bytes("16g").error().message.find("'16g'"), std::string::npos);
}

TEST(ParseDuration, AcceptsUnits) {
  using namespace std::chrono_literals;
  EXPECT_EQ(*parse_duration("2s"), 2s);
  EXPECT_EQ(*parse_duration("500ms"), 500ms);
  EXPECT_EQ(*parse_duration("1.5m"), 90s);
  EXPECT_EQ(*parse_duration("1h"), 3600s);
  EXPECT_EQ(*parse_duration("0.25s"), 250ms);
}

TEST(ParseDuration, RejectsBareNumbersAndUnknownUnits) {
  for (const char* bad : {"2", "", "s", "2d", "-1s", "2 sec", "ms"}) {
    auto r = parse_duration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("duration"), std::string::npos);
  }
}

TEST(FormatBytes, PrintsUnit) {
  EXPECT_EQ(format_bytes(14.1e9), "14.10 GB");
  EXPECT_EQ(format_bytes(16.0 * (1ULL << 30), true), "16.00 GiB");
  EXPECT_EQ(format_bytes(512e6), "0.51 GB");
  EXPECT_EQ(format_bytes(20e6), "20.0 MB");
  EXPECT_EQ(format_bytes(512), "512 B");
}

}  // namespace
}  // namespace ramguard
