#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "report/render.hpp"

namespace ramguard::report {
namespace {

using testing::design_build;
using testing::design_report;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_python_check;
using testing::write_temp;

TEST(ReportSvg, WellFormedWithPhasesVerdictsAxesAndLines) {
  const v1::ReportReply reply = design_report(design_build(3));
  const std::string svg = report_svg(reply, {.budget_bytes = 16'000'000'000});
  EXPECT_THAT(svg, HasSubstr("budget 16.00 GB"));
  EXPECT_THAT(svg, HasSubstr("estimate 11.10 GB"));
  EXPECT_THAT(svg, HasSubstr("RSS (GB)"));
  EXPECT_THAT(svg, HasSubstr("time since run start (s)"));
  EXPECT_THAT(svg, HasSubstr("class=\"range\""));  // downsampled min/max
  const std::string path = write_temp("final.svg", svg);
  EXPECT_EQ(run_python_check("check_svg.py", path + " load aggregation synchronization save "
                                                    "release phase_gap estimate_accuracy R1 R3 "
                                                    "'budget 16.00 GB'"),
            0);
}

TEST(ReportSvg, BaselineBuildShowsItsWarningsInBinaryUnits) {
  const std::string svg = report_svg(design_report(design_build(0)), {.binary_units = true});
  EXPECT_THAT(svg, HasSubstr("RSS (GiB)"));
  EXPECT_EQ(svg.find("budget"), std::string::npos);  // no budget known: no line, no legend
  const std::string path = write_temp("baseline.svg", svg);
  EXPECT_EQ(run_python_check("check_svg.py",
                             path + " growth_warning release '[warning] growth_warning fail' "
                                    "'[critical] release fail'"),
            0);
}

TEST(ReportSvg, MarksTheRunEndAndWhetherTheReleasePassed) {
  const std::string failed = report_svg(design_report(design_build(0)), {});
  const std::string passed = report_svg(design_report(design_build(3)), {});
  for (const std::string* svg : {&failed, &passed}) {
    EXPECT_THAT(*svg, HasSubstr("<g class=\"run-end\"><title>run end</title>"));
    EXPECT_THAT(*svg, HasSubstr(">run end</text>"));  // the legend says what the line is
  }
  // The verdict table inside the picture says it in the words of the CLI and the text report.
  EXPECT_THAT(failed, HasSubstr(">[critical] release fail: "));
  EXPECT_THAT(failed, Not(HasSubstr("release pass")));
  EXPECT_THAT(passed, HasSubstr(">[info] release pass: "));
  EXPECT_THAT(passed, Not(HasSubstr("release fail")));
}

TEST(ReportSvg, MarksTheCensusRoundsWithTheirLargestHolder) {
  v1::ReportReply reply = design_report(design_build(0));
  const std::string without = report_svg(reply, {});
  EXPECT_THAT(without, Not(HasSubstr("class=\"census\"")));
  EXPECT_THAT(without, Not(HasSubstr("census (who holds the memory)")));
  ASSERT_GE(reply.run().boundaries_size(), 2);
  for (int i : {0, 1}) {
    const v1::BoundaryReading& b = reply.run().boundaries(i);
    v1::RoundCensus& rc = *reply.mutable_run()->add_censuses();
    rc.set_round(b.round());
    rc.set_at_unix_ms(b.reading().at_unix_ms());
    rc.set_unexplained_bytes(-250'000'000 * (i + 1));
    v1::CensusGroup& g = *rc.mutable_census()->add_groups();
    g.set_holder(i == 0 ? "server.state" : "ns['<previous>']");
    g.set_reachable(i == 0);
    g.set_bytes(2'000'000'000ULL * static_cast<std::uint64_t>(i + 1));
  }
  const std::string svg = report_svg(reply, {});
  std::size_t ticks = 0;
  for (auto at = svg.find("<g class=\"census\">"); at != std::string::npos;
       at = svg.find("<g class=\"census\">", at + 1)) {
    ++ticks;
  }
  EXPECT_EQ(ticks, 2U);
  const std::string round = std::to_string(reply.run().boundaries(0).round());
  EXPECT_THAT(svg, HasSubstr("<title>census at round " + round +
                             ": largest holder server.state, 2.00 GB; unexplained -0.25 GB"));
  // The client's holder text is escaped, and a cycle's holder is said to be one.
  EXPECT_THAT(svg, HasSubstr("largest holder ns[&apos;&lt;previous&gt;&apos;] (reference cycle), "
                             "4.00 GB; unexplained -0.50 GB"));
  EXPECT_THAT(svg, HasSubstr(">census</text>"));
  EXPECT_THAT(svg, HasSubstr("census (who holds the memory)"));
  // Each tick sits on its round's boundary line.
  const std::string boundary = svg.substr(svg.find("<g class=\"round\">"));
  const auto x_of = [](const std::string& text) {
    const auto at = text.find("<line x1=\"") + 10;
    return text.substr(at, text.find('"', at) - at);
  };
  EXPECT_EQ(x_of(svg.substr(svg.find("<g class=\"census\">"))), x_of(boundary));
  EXPECT_EQ(run_python_check("check_svg.py", write_temp("census.svg", svg) + " census"), 0);
}

TEST(ReportSvg, HostileLabelsAreEscaped) {
  v1::ReportReply reply = design_report(design_build(0));
  const std::string hostile = "<script>alert('x')</script> & \"q\"";
  reply.mutable_run()->set_job(hostile);
  reply.mutable_run()->mutable_phases(0)->set_phase("<ph&se>");
  reply.mutable_run()->mutable_verdicts(0)->set_kind("k<i>nd");
  reply.mutable_run()->mutable_verdicts(0)->set_summary("sum\x01mary]]>");
  const std::string svg = report_svg(reply, {});
  EXPECT_THAT(svg, Not(HasSubstr("<script")));
  EXPECT_THAT(svg, Not(HasSubstr("<ph&se>")));
  EXPECT_THAT(svg,
              HasSubstr("&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; &quot;q&quot;"));
  const std::string path = write_temp("hostile.svg", svg);
  const std::string expected = write_temp("hostile.expected", hostile + "\n<ph&se>\nk<i>nd\n");
  EXPECT_EQ(run_python_check("check_svg.py", path + " @" + expected), 0);
}

TEST(ReportSvg, EmptyAndSampleLessRunsStillDraw) {
  const std::string path = write_temp("empty.svg", report_svg(v1::ReportReply{}, {}));
  EXPECT_EQ(run_python_check("check_svg.py", path + " 'RSS (GB)'"), 0);
  v1::ReportReply reply = design_report(design_build(1));
  reply.clear_samples();
  const std::string svg = report_svg(reply, {});
  EXPECT_THAT(svg, HasSubstr("<polyline class=\"rss\""));
  EXPECT_EQ(run_python_check("check_svg.py", write_temp("nosamples.svg", svg) + " R2"), 0);
}

}  // namespace
}  // namespace ramguard::report
