// The daemon's own cost: statm parsing, own RSS, jemalloc through the weak mallctl.
#include "metrics/self_stats.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "metrics/exporter.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard {
namespace {

TEST(ParseStatmResidentPages, Table) {
  struct Case {
    std::string text;
    bool ok;
    std::uint64_t pages;
  };
  const Case cases[] = {
      {"1000 250 30 5 0 400 0\n", true, 250},
      {"1000 250 30 5 0 400 0", true, 250},
      {"  1000   77 1 1 0 1 0\n", true, 77},
      {"18446744073709551615 18446744073709551615 0 0 0 0 0", true, 18446744073709551615ull},
      {"", false, 0},
      {"   ", false, 0},
      {"1000", false, 0},
      {"1000 ", false, 0},
      {"1000 abc 3", false, 0},
      {"1000 -5 3", false, 0},
      {"1000 12x 3", false, 0},
      {"1000 99999999999999999999999 3", false, 0},
  };
  for (const auto& c : cases) {
    auto pages = parse_statm_resident_pages(c.text);
    EXPECT_EQ(pages.ok(), c.ok) << "'" << c.text << "'";
    if (c.ok && pages.ok()) {
      EXPECT_EQ(*pages, c.pages) << c.text;
    }
    if (!c.ok && !pages.ok()) {
      EXPECT_NE(pages.error().message.find("statm"), std::string::npos);
    }
  }
}

TEST(ReadStatmRssBytes, ReadsAFileInPagesAndNamesAMissingOne) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ramguard-self-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "statm") << "5000 300 10 1 0 200 0\n";
  auto rss = read_statm_rss_bytes(dir / "statm");
  ASSERT_TRUE(rss.ok()) << rss.error().message;
  EXPECT_EQ(*rss, 300u * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
  auto missing = read_statm_rss_bytes(dir / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find((dir / "nope").string()), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(SelfMetrics, OwnRssAndJemallocStatsAreExportedWhenJemallocIsLinked) {
  EXPECT_EQ(jemalloc_linked(), RAMGUARD_EXPECT_JEMALLOC == 1);
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  auto status = exporter.daemon()->update_self("/proc/self/statm");
  ASSERT_TRUE(status.ok()) << status.error().message;
  auto response = testkit::http_get(exporter.port());
  ASSERT_TRUE(response.ok());
  const auto s = testkit::parse_samples(response->body);
  const auto self_rss = testkit::sample(s, "ramguard_self_rss_bytes");
  ASSERT_TRUE(self_rss);
  EXPECT_GT(*self_rss, 1e6);  // a real process: at least a megabyte resident
  const char* jemalloc_names[] = {
      "ramguard_jemalloc_allocated_bytes", "ramguard_jemalloc_active_bytes",
      "ramguard_jemalloc_resident_bytes", "ramguard_jemalloc_retained_bytes"};
  for (const char* name : jemalloc_names) {
    const auto value = testkit::sample(s, name);
    if (RAMGUARD_EXPECT_JEMALLOC == 1) {
      ASSERT_TRUE(value) << name;
      EXPECT_GT(*value, 0) << name;
    } else {
      EXPECT_FALSE(value) << name << " must be omitted without jemalloc";
    }
  }
}

TEST(SelfMetrics, JemallocStatsFollowAllocations) {
  if (RAMGUARD_EXPECT_JEMALLOC == 0) {
    EXPECT_FALSE(read_jemalloc_stats().has_value());  // the weak symbol is null: omitted
    return;
  }
  const auto before = read_jemalloc_stats();
  ASSERT_TRUE(before);
  std::vector<char> block(64 << 20, 1);  // 64 MiB, touched
  const auto during = read_jemalloc_stats();
  ASSERT_TRUE(during);
  EXPECT_GE(during->allocated_bytes, before->allocated_bytes + (64u << 20));
  EXPECT_GE(during->resident_bytes, during->allocated_bytes / 2);
  EXPECT_EQ(block[12345], 1);
}

TEST(SelfMetrics, AnUnreadableStatmIsAnErrorAndKeepsThePreviousValue) {
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  ASSERT_TRUE(exporter.daemon()->update_self("/proc/self/statm").ok());
  auto status = exporter.daemon()->update_self("/nonexistent/statm");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("/nonexistent/statm"), std::string::npos);
  auto response = testkit::http_get(exporter.port());
  ASSERT_TRUE(response.ok());
  EXPECT_GT(testkit::sample(testkit::parse_samples(response->body), "ramguard_self_rss_bytes")
                .value_or(0),
            0);
}

}  // namespace
}  // namespace ramguard
