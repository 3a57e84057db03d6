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

TEST(ReportText, BaselineBuildShowsPeakFloorsReleaseAndVerdicts) {
  const std::string text = report_text(design_report(design_build(0)), {});
  EXPECT_THAT(text, HasSubstr("vit-h14-fedavg"));
  EXPECT_THAT(text, HasSubstr("arch=vit-h14,build=baseline"));
  EXPECT_THAT(text, HasSubstr("29.40 GB (exact: kernel high-water mark)"));
  EXPECT_THAT(text, HasSubstr("Baseline:       RSS 0.60 GB (anon 0.50 GB, page cache 0.10 GB"));
  EXPECT_THAT(text, HasSubstr("14.10 GB"));
  EXPECT_THAT(text, HasSubstr("15.70 GB"));
  EXPECT_THAT(text, HasSubstr("17.30 GB"));
  EXPECT_THAT(text, HasSubstr("+1.60 GB"));  // floor change per round
  EXPECT_THAT(text, HasSubstr("[critical] release fail: "));
  EXPECT_THAT(text, HasSubstr("held_bytes: 25.40 GB"));
  EXPECT_THAT(text, HasSubstr("growth_warning"));
  EXPECT_THAT(text, HasSubstr("critical"));
  EXPECT_THAT(text, HasSubstr("Rounds:         3 of 3"));
  EXPECT_THAT(text, HasSubstr("none (no admitted estimate)"));
  for (const char* phase : {"load", "aggregation", "synchronization", "save"}) {
    EXPECT_THAT(text, HasSubstr(phase));
  }
}

TEST(ReportText, FinalBuildShowsGapsEstimateAndPassedRelease) {
  const std::string text = report_text(design_report(design_build(3)), {});
  EXPECT_THAT(text, HasSubstr("9.60 GB (exact"));
  EXPECT_THAT(
      text, HasSubstr("Estimate:       11.10 GB; peak/estimate ratio 0.86 (peak within estimate)"));
  EXPECT_THAT(text, HasSubstr("[info] release pass: "));
  EXPECT_THAT(text, HasSubstr("aggregation      synchronization  6.75 s"));
  EXPECT_THAT(text, HasSubstr("6.75 s"));
  EXPECT_THAT(text, HasSubstr("5.00 s"));
  EXPECT_THAT(text, HasSubstr("within target"));
  EXPECT_THAT(text, Not(HasSubstr("release fail")));
  EXPECT_THAT(text, Not(HasSubstr("growth_warning")));
}

TEST(ReportText, ALongRunsReportSaysWhatItLeavesOutWithTotalsByName) {
  v1::ReportReply reply = design_report(design_build(3));
  v1::RunStatus& run = *reply.mutable_run();
  run.set_earlier_phases(49'744);
  auto* totals = run.add_earlier_phase_totals();
  totals->set_phase("aggregation");
  totals->set_count(24'872);
  totals->set_max_peak_bytes(9'600'000'000);
  totals->set_total_seconds(1'250.5);
  run.set_earlier_verdicts(300);
  v1::Verdict& worst = *run.mutable_worst_earlier_verdict();
  worst.set_kind("leak");
  worst.set_severity(v1::CRITICAL);
  worst.set_summary("floor grew 3.20 GB over 3 rounds");
  const std::string text = report_text(reply, {});
  EXPECT_THAT(text, HasSubstr("49744 earlier phases, showing the last " +
                              std::to_string(run.phases_size())));
  EXPECT_THAT(text, HasSubstr("Earlier phases by name"));
  EXPECT_THAT(text, HasSubstr("24872"));
  EXPECT_THAT(text, HasSubstr("9.60 GB"));
  EXPECT_THAT(text, HasSubstr("300 earlier verdicts, showing the last " +
                              std::to_string(run.verdicts_size()) +
                              "; the worst of them: critical leak (floor grew 3.20 GB"));
  // A report that lists everything says nothing of the kind.
  const std::string whole = report_text(design_report(design_build(3)), {});
  EXPECT_THAT(whole, Not(HasSubstr("earlier phases")));
  EXPECT_THAT(whole, Not(HasSubstr("earlier verdicts")));
}

TEST(ReportText, BinaryUnitsUseGiB) {
  const std::string text = report_text(design_report(design_build(0)), {.binary_units = true});
  EXPECT_THAT(text, HasSubstr("27.38 GiB"));  // 29.4e9 / 2^30
  EXPECT_THAT(text, HasSubstr("13.13 GiB"));  // first floor 14.1e9
  // Only the daemon's own summaries (decimal by design) may still say GB.
  EXPECT_THAT(text, Not(HasSubstr("29.40 GB")));
  EXPECT_THAT(text, Not(HasSubstr("14.10 GB")));
}

TEST(ReportText, SampledPeakIsSaidSo) {
  v1::ReportReply reply = design_report(design_build(3));
  reply.mutable_run()->set_peak_exact(false);
  reply.mutable_run()->mutable_phases(1)->set_peak_exact(false);
  const std::string text = report_text(reply, {});
  EXPECT_THAT(text, HasSubstr("9.60 GB (sampled: short spikes between samples may be missed)"));
  EXPECT_THAT(text, HasSubstr("sampled\n"));
}

// Allocator facts at round ends: the boundaries table says what the application holds and
// what the allocator keeps free; the JSON carries them (schema-checked) and the SVG's titles.
TEST(ReportText, AllocatorFactsAtRoundEndsShowAsTwoColumns) {
  v1::ReportReply reply = design_report(design_build(3));
  v1::AllocatorStats* a = reply.mutable_run()->mutable_boundaries(1)->mutable_allocator();
  a->set_allocator("glibc");
  a->set_allocated_bytes(4'200'000'000);
  a->set_retained_bytes(1'300'000'000);
  a->set_resident_bytes(5'500'000'000);
  const std::string text = report_text(reply, {});
  EXPECT_THAT(text, HasSubstr("app holds"));
  EXPECT_THAT(text, HasSubstr("alloc keeps free"));
  EXPECT_THAT(text, HasSubstr("4.20 GB"));
  EXPECT_THAT(text, HasSubstr("1.30 GB"));
  EXPECT_THAT(text, HasSubstr("free memory the allocator keeps is not growth either"));
  EXPECT_THAT(report_text(design_report(design_build(3)), {}), Not(HasSubstr("app holds")));
  EXPECT_THAT(report_svg(reply, {}),
              HasSubstr("the application holds 4.20 GB, glibc keeps 1.30 GB free"));
  const std::string json = report_json(reply);
  EXPECT_THAT(json, HasSubstr("\"allocator\":{\"allocator\":\"glibc\",\"live_bytes\":4200000000,"
                              "\"free_bytes\":1300000000,\"resident_bytes\":5500000000}"));
}

TEST(ReportText, EmptyReplyRendersWithoutCrashing) {
  const std::string text = report_text(v1::ReportReply{}, {});
  EXPECT_THAT(text, HasSubstr("Phases: none marked"));
  EXPECT_THAT(text, HasSubstr("Round boundaries: none"));
  EXPECT_THAT(text, HasSubstr("Verdicts: none"));
}

TEST(ReportText, HostileStringsCannotBreakLinesOrSendEscapes) {
  v1::ReportReply reply = design_report(design_build(0));
  reply.mutable_run()->set_job("evil\njob\x1b[31m");
  (*reply.mutable_run()->mutable_labels())["note"] = "a\rb";
  reply.mutable_run()->mutable_verdicts(0)->set_summary("line1\nline2");
  const std::string text = report_text(reply, {});
  EXPECT_THAT(text, HasSubstr("evil\\njob\\x1b[31m"));
  EXPECT_THAT(text, HasSubstr("note=a\\rb"));
  EXPECT_THAT(text, HasSubstr("line1\\nline2"));
  EXPECT_THAT(text, Not(HasSubstr("\x1b")));
  EXPECT_THAT(text, Not(HasSubstr("\r")));
}

TEST(RunsTable, ListsJobLabelsStateAndWorstVerdict) {
  v1::ListRunsReply reply;
  *reply.add_runs() = design_report(design_build(0)).run();
  *reply.add_runs() = design_report(design_build(3)).run();
  reply.mutable_runs(1)->set_state("active");
  const std::string text = runs_table(reply, {});
  EXPECT_THAT(text, HasSubstr("r-baseline"));
  EXPECT_THAT(text, HasSubstr("critical release (fail)"));
  EXPECT_THAT(text, HasSubstr("active"));
  EXPECT_THAT(text, HasSubstr("build=final"));
  EXPECT_THAT(text, HasSubstr("2024-05-01 10:40:00 UTC"));
  EXPECT_EQ(runs_table(v1::ListRunsReply{}, {}), "no runs\n");
}

TEST(StatusText, ShowsBudgetReservationsAndRuns) {
  v1::StatusReply reply;
  reply.set_budget_bytes(16'000'000'000);
  reply.set_margin_bytes(500'000'000);
  reply.set_reserved_bytes(11'100'000'000);
  reply.set_store_available(false);
  v1::Reservation* r = reply.add_reservations();
  r->set_reservation_id("res-1");
  r->set_job("vit");
  r->set_bytes(11'100'000'000);
  r->set_expires_in_seconds(42.5);
  v1::RunStatus* run = reply.add_runs();
  *run = design_report(design_build(3)).run();
  run->set_state("active");
  run->set_current_phase("aggregation");
  const std::string text = status_text(reply, {});
  EXPECT_THAT(text, HasSubstr("16.00 GB (margin 0.50 GB, usable 15.50 GB)"));
  EXPECT_THAT(text, HasSubstr("11.10 GB in 1 reservation(s)"));
  EXPECT_THAT(text, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(text, HasSubstr("(unclaimed)"));
  EXPECT_THAT(text, HasSubstr("42.50 s"));
  EXPECT_THAT(text, HasSubstr("aggregation"));
  EXPECT_THAT(text, HasSubstr("0.70 GB"));  // last reading
}

}  // namespace
}  // namespace ramguard::report

namespace ramguard::report {
namespace {

TEST(ReportText, RoundsSayHowManyRoundEndsTheLedgerHolds) {
  // Round numbers reached 3020 but only 3 round ends were stored (a full disk, then kill -9):
  // the report must not claim 3020 rounds of data without saying what it holds.
  v1::ReportReply reply = testing::design_report(testing::design_build(0));
  reply.mutable_run()->set_round(3020);
  const std::string text = report_text(reply, {});
  EXPECT_THAT(text, ::testing::HasSubstr("Rounds:         3020 of 3 (round ends held: 3)"));
  EXPECT_THAT(report_json(reply), ::testing::HasSubstr("\"round_ends_held\":3"));
  // When every round end is held, no remark.
  EXPECT_THAT(report_text(testing::design_report(testing::design_build(0)), {}),
              ::testing::Not(::testing::HasSubstr("round ends held")));
}

TEST(StatusText, SaysWhenTheLedgerCannotBeWritten) {
  v1::StatusReply reply;
  reply.set_store_available(true);
  reply.set_store_writable(false);
  reply.set_store_state("read-only: cannot write /var/lib/ramguard/ramguard.db");
  EXPECT_THAT(
      status_text(reply, {}),
      ::testing::HasSubstr("NOT WRITABLE (read-only: cannot write "
                           "/var/lib/ramguard/ramguard.db); new marks kept in memory only"));
  reply.set_store_writable(true);
  EXPECT_THAT(status_text(reply, {}), ::testing::HasSubstr("Store:          available"));
}

}  // namespace
}  // namespace ramguard::report

namespace ramguard::report {
namespace {

TEST(StatusText, NamesTheNewestCensusLargestHolderAndItsGap) {
  v1::StatusReply reply;
  v1::RunStatus& with = *reply.add_runs();
  with.set_run_id("r-census");
  for (std::uint32_t round : {2u, 3u}) {
    v1::RoundCensus& rc = *with.add_censuses();
    rc.set_round(round);
    rc.set_unexplained_bytes(round == 3 ? 310'000'000 : -5'000'000'000);
    v1::CensusGroup& g = *rc.mutable_census()->add_groups();
    g.set_holder(round == 3 ? "ns['previous']" : "old.holder");
    g.set_reachable(round != 3);
    g.set_bytes(2'000'000'000);
  }
  reply.add_runs()->set_run_id("r-plain");
  const std::string text = status_text(reply, {});
  EXPECT_THAT(text, ::testing::HasSubstr("  r-census census at round 3: largest holder "
                                         "ns['previous'] (cycle) 2.00 GB, unexplained 0.31 GB\n"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("old.holder")));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("r-plain census")));
  // A gap below zero (the census lists more than is counted) keeps its sign.
  with.mutable_censuses()->RemoveLast();
  EXPECT_THAT(status_text(reply, {}),
              ::testing::HasSubstr("largest holder old.holder 2.00 GB, unexplained -5.00 GB\n"));
}

}  // namespace
}  // namespace ramguard::report
