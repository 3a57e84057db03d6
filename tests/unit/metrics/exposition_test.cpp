// The hand-written part of the exposition: label escaping, values, and a scrape of a thousand
// targets that promtool accepts, with labels in name order on every line.
#include "metrics/exposition.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "metrics/exporter.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard {
namespace {

TEST(Exposition, LabelValuesAreEscapedAndInNameOrder) {
  EXPECT_EQ(exposition::render_labels({{"z", "1"}, {"a", "x\"y\\z\nw"}}),
            "a=\"x\\\"y\\\\z\\nw\",z=\"1\"");
  EXPECT_EQ(exposition::render_labels({}), "");
}

TEST(Exposition, ValuesReadBackExactly) {
  std::string out;
  exposition::append_sample(out, "m", "", 17179869184.0);
  exposition::append_sample(out, "m", "a=\"1\"", 1796151988.409693);
  exposition::append_sample(out, "m", "", -2.5);
  exposition::append_sample(out, "m", "", std::numeric_limits<double>::quiet_NaN());
  exposition::append_sample(out, "m", "", std::numeric_limits<double>::infinity());
  exposition::append_sample(out, "m", "", -std::numeric_limits<double>::infinity());
  EXPECT_EQ(out, "m 17179869184\nm{a=\"1\"} 1796151988.409693\nm -2.5\nm NaN\nm +Inf\nm -Inf\n");
}

// Whole numbers below 2^53 take the integer path: plain digits where the shortest double form
// would say 1e+06. Above it, and for fractions and -0, the shortest double form.
TEST(Exposition, WholeNumbersArePlainDigitsAndTheRestTheShortestForm) {
  std::string out;
  for (const double v :
       {1e6, 0.0, -5.0, 9007199254740991.0, 9007199254740992.0, 1e300, -0.0, 0.1}) {
    exposition::append_sample(out, "m", "", v);
  }
  EXPECT_EQ(out,
            "m 1000000\nm 0\nm -5\nm 9007199254740991\nm 9007199254740992\nm 1e+300\nm -0\n"
            "m 0.1\n");
}

// A label set given in pieces is joined in order; with no labels, no braces.
TEST(Exposition, ALineJoinsItsLabelPiecesInOrder) {
  std::string out;
  exposition::append_line(out, "m", {"kind=\"anon\",", "job=\"j\"", "", ",run_id=\"r\""}, 3);
  exposition::append_line(out, "m", {"", ""}, 4);
  EXPECT_EQ(out, "m{kind=\"anon\",job=\"j\",run_id=\"r\"} 3\nm 4\n");
}

TEST(Exposition, HelpTextEscapesBackslashAndNewline) {
  std::string out;
  exposition::append_header(out, "m", "a\\b\nc", "gauge");
  EXPECT_EQ(out, "# HELP m a\\\\b\\nc\n# TYPE m gauge\n");
}

// A thousand watched processes and a run with a hostile job name: promtool accepts the
// scrape, every process has its fifteen series (thirteen of its memory and state, and what
// reading it costs: the last reading's time and the slow readings), and each line's labels
// are in name order.
TEST(Exposition, AThousandTargetsScrapeCleanly) {
  auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto& exporter = **started;
  exporter.table()->set_max_targets(2000);
  MemoryReading reading;
  reading.rss_bytes = 3 << 20;
  reading.anon_bytes = 1 << 20;
  reading.file_bytes = 2 << 20;
  reading.source = ReadingSource::kMark;  // as at watch start: swap is read too
  std::vector<std::string> jobs;
  for (int i = 0; i < 1000; ++i) jobs.push_back(WatchList::job_for_pid(100000 + i));
  for (const std::string& job : jobs) {
    const TargetRef target{job, job};
    exporter.targets()->set_target_up(target, true, "");
    exporter.targets()->observe_sample(target, reading, 4 << 20, true, ReadTiming{0.000002, 0, 0});
  }
  const std::string hostile = "job \"with\" \\ quotes\nand a newline";
  exporter.targets()->observe_boundary(TargetRef{hostile, "run-1"},
                                       testkit::settled_boundary(3, 100, 90, 90));

  auto response = testkit::http_get(exporter.port());
  ASSERT_TRUE(response.ok()) << response.error().message;
  const auto check = testkit::promtool_check_metrics(response->body);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  const auto samples = testkit::parse_samples(response->body);
  for (const std::string& job : {jobs.front(), jobs.back()}) {
    const std::map<std::string, std::string> own = {{"ramguard_job", job}, {"run_id", job}};
    EXPECT_EQ(testkit::sample(samples, "ramguard_target_rss_bytes", own), 3 << 20);
    auto anon = own;
    anon["kind"] = "anon";
    EXPECT_EQ(testkit::sample(samples, "ramguard_target_memory_bytes", anon), 1 << 20);
    EXPECT_EQ(testkit::sample(samples, "ramguard_target_counted_bytes", own), 1 << 20);
    auto unreadable = own;
    unreadable["reason"] = "unreadable";
    EXPECT_EQ(testkit::sample(samples, "ramguard_target_degraded", unreadable), 0);
    EXPECT_EQ(testkit::sample(samples, "ramguard_target_peak_bytes", own), 4 << 20);
    EXPECT_EQ(testkit::sample(samples, "ramguard_target_read_seconds", own), 0.000002);
    EXPECT_EQ(testkit::sample(samples, "ramguard_target_slow_reads_total", own), 0);
  }
  std::size_t lines = 0;
  for (const auto& [key, value] : samples) lines += key.find("pid-1") != std::string::npos;
  EXPECT_EQ(lines, 15u * 1000);
  EXPECT_NE(response->body.find("ramguard_job=\"job \\\"with\\\" \\\\ quotes\\nand a newline\""),
            std::string::npos);

  // Prometheus asks in HTTP/1.1 and gets the same exposition in chunks, sent as it is written.
  std::size_t chunks = 0;
  auto chunked = testkit::http11_get(exporter.port(), &chunks);
  ASSERT_TRUE(chunked.ok()) << chunked.error().message;
  EXPECT_NE(chunked->headers.find("Transfer-Encoding: chunked"), std::string::npos)
      << chunked->headers;
  EXPECT_GT(chunks, 1u);
  EXPECT_EQ(testkit::parse_samples(chunked->body), samples);
  EXPECT_EQ(testkit::promtool_check_metrics(chunked->body).exit_code, 0);
}

}  // namespace
}  // namespace ramguard
