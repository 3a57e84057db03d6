// Charts of runs unlike the design figures, checked as a reader sees them: the y axis fits the
// run, a far-away budget is named at the edge, the release window does not take the width,
// labels do not overlap, ticks say their value, the verdicts are sentences in the picture, and
// the SVG renders to PNG (check_svg_layout.py, rsvg-convert).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "fixtures.hpp"
#include "report/render.hpp"
#include "report/svg_scale.hpp"

namespace ramguard::report {
namespace {

using testing::design_build;
using testing::design_report;
using testing::kStartMs;
using testing::run_python_check;
using testing::write_temp;

std::int64_t at(double seconds) {
  return kStartMs + static_cast<std::int64_t>(seconds * 1e3);
}

void sample(v1::ReportReply& reply, double seconds, double bytes) {
  v1::SamplePoint* s = reply.add_samples();
  s->set_at_unix_ms(at(seconds));
  s->set_rss_bytes(static_cast<std::uint64_t>(bytes));
  s->set_min_rss_bytes(static_cast<std::uint64_t>(bytes));
  s->set_max_rss_bytes(static_cast<std::uint64_t>(bytes));
}

v1::Verdict* verdict(v1::RunStatus& run, const char* kind, v1::Severity severity, bool passed,
                     std::uint32_t round, const std::string& summary, double seconds) {
  v1::Verdict* v = run.add_verdicts();
  v->set_kind(kind);
  v->set_severity(severity);
  v->set_passed(passed);
  v->set_round(round);
  v->set_summary(summary);
  v->set_at_unix_ms(at(seconds));
  return v;
}

// A run of `rounds` rounds of load/aggregation/synchronization/save lasting `round_s` each,
// `floor` bytes at the first round end growing by `leak` per round, then a release window of
// `grace_s` with a failed or passed release.
v1::ReportReply synthetic_run(const std::string& job, int rounds, double round_s, double floor,
                              double leak, double spike, double grace_s, bool release_passed) {
  v1::ReportReply reply;
  v1::RunStatus& run = *reply.mutable_run();
  run.set_run_id("r-20261202-140000-" + job);
  run.set_job(job);
  run.set_state("ended");
  run.set_started_unix_ms(kStartMs);
  run.mutable_baseline()->set_at_unix_ms(kStartMs);
  run.mutable_baseline()->set_rss_bytes(20'000'000);
  run.set_peak_exact(true);
  double peak = 0;
  sample(reply, 0, 20e6);
  for (int r = 1; r <= rounds; ++r) {
    const double begin = (r - 1) * round_s;
    const double held = floor + leak * (r - 1);
    const char* names[] = {"load", "aggregation", "synchronization", "save"};
    for (int p = 0; p < 4; ++p) {
      v1::PhaseStat* phase = run.add_phases();
      phase->set_phase(names[p]);
      phase->set_round(static_cast<std::uint32_t>(r));
      phase->set_begin_seconds(begin + p * round_s / 4);
      phase->set_duration_seconds(round_s / 5);
      phase->set_peak_bytes(static_cast<std::uint64_t>(held + spike * (p == 1 ? 1 : 0.5)));
      phase->set_peak_exact(true);
      sample(reply, begin + p * round_s / 4 + round_s / 10, held + spike * (p == 1 ? 1 : 0.5));
      peak = std::max(peak, held + spike);
    }
    v1::BoundaryReading* b = run.add_boundaries();
    b->set_round(static_cast<std::uint32_t>(r));
    b->mutable_reading()->set_at_unix_ms(at(r * round_s));
    b->mutable_reading()->set_rss_bytes(static_cast<std::uint64_t>(held));
    b->set_floor_bytes(static_cast<std::uint64_t>(held));
    sample(reply, r * round_s, held);
    if (leak > 0 && r >= 2) {
      verdict(run, "growth_warning", v1::WARNING, false, static_cast<std::uint32_t>(r),
              "Floor rose by " + std::to_string(static_cast<int>(leak / 1e6)) + " MB in round " +
                  std::to_string(r) + ", above the per-round threshold.",
              r * round_s + 0.5);
    }
  }
  const double end_s = rounds * round_s + 0.2;
  const double after = release_passed ? 30e6 : floor + leak * (rounds - 1);
  run.set_ended_unix_ms(at(end_s));
  run.set_peak_bytes(static_cast<std::uint64_t>(peak));
  run.mutable_last()->set_at_unix_ms(at(end_s + grace_s));
  run.mutable_last()->set_rss_bytes(static_cast<std::uint64_t>(after));
  sample(reply, end_s + grace_s / 2, after);
  sample(reply, end_s + grace_s, after);
  v1::Verdict* release =
      verdict(run, "release", release_passed ? v1::INFO : v1::WARNING, release_passed, 0,
              release_passed ? "Release passed: RSS fell to 30.0 MB."
                             : "Release failed: still resident after the grace; a leak.",
              end_s + grace_s);
  (*release->mutable_figures())["limit_bytes"] = 20e6 + 200e6;
  return reply;
}

std::string check_args(const std::string& path, double peak, const std::string& extra) {
  return path + " " + std::to_string(static_cast<std::uint64_t>(peak)) + " " + extra;
}

TEST(SvgScale, TickStepsAndTheirLabels) {
  EXPECT_DOUBLE_EQ(nice_step(10, 4), 2.5);
  EXPECT_EQ(tick_text(2.5, 2.5), "2.5");
  EXPECT_EQ(tick_text(5, 2.5), "5");
  EXPECT_EQ(tick_text(7.5, 2.5), "7.5");
  EXPECT_EQ(tick_text(0.25, 0.25), "0.25");
  EXPECT_EQ(tick_text(40, 20), "40");
  const auto t = ticks(0, 10, 2.5);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_DOUBLE_EQ(t[3], 7.5);
  // A 30 s release grace after a 4 s run takes a sixth of the width, not seven eighths.
  const TimeAxis x = TimeAxis::make(4, 34, 0, 1000);
  EXPECT_TRUE(x.compressed);
  EXPECT_NEAR(x(4), 840, 1);
  EXPECT_NEAR(x(2), 420, 1);
  EXPECT_NEAR(x(34), 1000, 1e-9);
  EXPECT_FALSE(TimeAxis::make(30, 34, 0, 1000).compressed);
}

TEST(SvgLayout, AOneGigabyteRunUnderA16GBBudget) {
  // Three 2.5 s rounds, 1 GB peak, 30 s release grace, budget 16 GB.
  const v1::ReportReply reply = synthetic_run("one-gb", 3, 2.5, 0.6e9, 0, 0.4e9, 30, true);
  const std::string svg = report_svg(reply, {.budget_bytes = 16'000'000'000});
  const std::string path = write_temp("one-gb.svg", svg);
  EXPECT_EQ(run_python_check("check_svg_layout.py",
                             check_args(path, 1e9,
                                        "--off-scale budget --line 'release limit' "
                                        "'budget 16.00 GB' '[info] release pass: Release passed'")),
            0);
}

TEST(SvgLayout, TheDemoLikeBaselineBuild) {
  // The demo's baseline build (daemon/README.md figures at full size) under the 16 GB budget,
  // below its 29.4 GB peak: the budget line is drawn to scale.
  v1::ReportReply reply = design_report(design_build(0));
  const std::string svg = report_svg(reply, {.budget_bytes = 16'000'000'000});
  const std::string path = write_temp("demo-like.svg", svg);
  EXPECT_EQ(run_python_check(
                "check_svg_layout.py",
                check_args(path, static_cast<double>(reply.run().peak_bytes()),
                           "--line budget '[warning] growth_warning fail, round 2' "
                           "'[critical] release fail' load aggregation synchronization save")),
            0);
}

TEST(SvgLayout, AFortyRoundRunWithASmallLeak) {
  // 40 rounds of 5 s, 20 MB kept per round: 39 growth warnings (one row in the table, so the
  // failed release still shows), a failed release; the 1.6 GB
  // budget is near the 1.28 GB peak and drawn to scale.
  const v1::ReportReply reply = synthetic_run("forty", 40, 5, 0.3e9, 20e6, 0.2e9, 30, false);
  const std::string svg = report_svg(reply, {.budget_bytes = 1'600'000'000});
  const std::string path = write_temp("forty.svg", svg);
  const double peak = static_cast<double>(reply.run().peak_bytes());
  EXPECT_EQ(run_python_check("check_svg_layout.py",
                             check_args(path, peak,
                                        "--line budget '[warning] growth_warning fail 39 "
                                        "times, rounds 2 to 40; the last' "
                                        "'[warning] release fail: Release failed'")),
            0);
}

}  // namespace
}  // namespace ramguard::report
