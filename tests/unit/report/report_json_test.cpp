#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "fixtures.hpp"
#include "report/render.hpp"

namespace ramguard::report {
namespace {

using testing::design_build;
using testing::design_report;
using ::testing::HasSubstr;
using testing::run_python_check;
using testing::write_temp;

const std::string kSchema = RAMGUARD_REPORT_SCHEMA;

TEST(ReportJson, EveryDesignBuildValidatesAgainstTheSchema) {
  std::string files;
  for (int i = 0; i < 4; ++i) {
    const auto& build = design_build(i);
    files += " " + write_temp("report-" + build.name + ".json", report_json(design_report(build)));
  }
  files += " " + write_temp("report-empty.json", report_json(v1::ReportReply{}));
  v1::ReportReply with_allocator = design_report(design_build(1));
  auto* facts = with_allocator.mutable_run()->mutable_boundaries(0)->mutable_allocator();
  facts->set_allocator("jemalloc");
  facts->set_allocated_bytes(1);
  files += " " + write_temp("report-allocator.json", report_json(with_allocator));
  EXPECT_EQ(run_python_check("check_report_json.py", kSchema + files), 0);
}

TEST(ReportJson, HostileStringsAndNonFiniteFiguresStayValid) {
  v1::ReportReply reply = design_report(design_build(0));
  reply.mutable_run()->set_job("a\"b\\c\n\x01</script>");
  (*reply.mutable_run()->mutable_labels())["k,\"ey"] = "v\tal\xff";  // invalid UTF-8 byte too
  (*reply.mutable_run()->mutable_verdicts(0)->mutable_figures())["ratio"] =
      std::numeric_limits<double>::quiet_NaN();
  (*reply.mutable_run()->mutable_verdicts(0)->mutable_figures())["inf_seconds"] =
      std::numeric_limits<double>::infinity();
  const std::string json = report_json(reply);
  EXPECT_THAT(json, HasSubstr("\"job\":\"a\\\"b\\\\c\\n\\u0001</script>\""));
  EXPECT_THAT(json, HasSubstr("\"ratio\":null"));
  const std::string path = write_temp("report-hostile.json", json);
  EXPECT_EQ(run_python_check("check_report_json.py", kSchema + " " + path), 0);
  EXPECT_EQ(run_python_check("check_json_parse.py",
                             path + " 'd[\"run\"][\"job\"] == \"a\\\"b\\\\c\\n\\x01</script>\" "
                                    "and d[\"run\"][\"labels\"][\"k,\\\"ey\"] == \"v\\tal?\"'"),
            0);
}

TEST(ReportJson, TheSchemaRejectsBrokenDocuments) {
  // The validator must be able to fail: a report without its peak, and one with a string size.
  std::string json = report_json(design_report(design_build(3)));
  std::string no_peak = json;
  const auto at = no_peak.find("\"peak\":{");
  ASSERT_NE(at, std::string::npos);
  no_peak.replace(at, 7, "\"peek\":");
  std::string string_size = json;
  const auto rss = string_size.find("\"rss_bytes\":");
  ASSERT_NE(rss, std::string::npos);
  string_size.insert(rss + 12, "\"1\",\"x_bytes\":");
  EXPECT_EQ(run_python_check("check_report_json.py", kSchema + " --expect-invalid " +
                                                         write_temp("broken1.json", no_peak) + " " +
                                                         write_temp("broken2.json", string_size)),
            0);
}

TEST(ReportJson, IsStableAndCarriesTheFigures) {
  v1::ReportReply a = design_report(design_build(3));
  v1::ReportReply b;
  b.CopyFrom(a);
  // Same labels inserted in another order must give the same bytes.
  b.mutable_run()->mutable_labels()->clear();
  (*b.mutable_run()->mutable_labels())["build"] = "final";
  (*b.mutable_run()->mutable_labels())["arch"] = "vit-h14";
  const std::string json = report_json(a);
  EXPECT_EQ(json, report_json(b));
  EXPECT_THAT(json, HasSubstr("\"labels\":{\"arch\":\"vit-h14\",\"build\":\"final\"}"));
  EXPECT_THAT(json, HasSubstr("\"peak\":{\"bytes\":9600000000,\"exact\":true,"
                              "\"source\":\"high_water_mark\"}"));
  EXPECT_THAT(json, HasSubstr("\"estimate\":{\"bytes\":11100000000"));
  EXPECT_THAT(json, HasSubstr("\"from_phase\":\"aggregation\",\"to_phase\":\"synchronization\","
                              "\"seconds\":6.75"));
  EXPECT_THAT(json, HasSubstr("\"floor_bytes\":6400000000"));
  const std::string path = write_temp("report-final.json", json);
  EXPECT_EQ(run_python_check("check_json_parse.py",
                             path + " 'd[\"release\"][\"passed\"] and len(d[\"phases\"]) == 8 and "
                                    "d[\"boundaries\"][2][\"floor_bytes\"] == 6500000000'"),
            0);
}

}  // namespace
}  // namespace ramguard::report
