// Detectors that read a run's ledger: phase gaps from marks, exited/lost, budget input.
#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "unit/verdicts/series_helpers.hpp"
#include "verdicts/budget.hpp"
#include "verdicts/exit.hpp"
#include "verdicts/phase_gap.hpp"

namespace ramguard {
namespace {

using test::at_seconds;

MarkRecord mark(MarkKind kind, const std::string& phase, std::uint32_t round, double t,
                std::uint64_t rss = 0) {
  MarkRecord m;
  m.kind = kind;
  m.phase = phase;
  m.round = round;
  m.reading.at = at_seconds(t);
  m.reading.rss_bytes = rss;
  m.reading.anon_bytes = rss;  // all anonymous
  m.reading.source = ReadingSource::kMark;
  return m;
}

std::vector<MarkRecord> rounds_with_gaps(const std::vector<double>& gaps) {
  std::vector<MarkRecord> marks{mark(MarkKind::kRunStart, "", 0, 0)};
  double t = 10;
  for (std::uint32_t r = 1; r <= gaps.size(); ++r) {
    marks.push_back(mark(MarkKind::kPhaseBegin, "aggregation", r, t));
    marks.push_back(mark(MarkKind::kPhaseEnd, "aggregation", r, t + 20));
    marks.push_back(mark(MarkKind::kPhaseBegin, "synchronization", r, t + 20 + gaps[r - 1]));
    marks.push_back(mark(MarkKind::kPhaseEnd, "synchronization", r, t + 40));
    marks.push_back(mark(MarkKind::kRoundEnd, "", r, t + 41));
    t += 60;
  }
  return marks;
}

// The final build: aggregation end -> synchronization begin took 6.75 s and 5.00 s, target 10 s.
TEST(PhaseGap, DesignFigurePassesAndEveryGapIsReturned) {
  DetectorParams p;
  const auto marks = rounds_with_gaps({6.75, 5.00});
  const auto a = measure_phase_gaps(marks, p);
  ASSERT_EQ(a.gaps.size(), 2u);
  EXPECT_NEAR(a.gaps[0].seconds, 6.75, 1e-9);
  EXPECT_NEAR(a.gaps[1].seconds, 5.00, 1e-9);
  EXPECT_EQ(a.gaps[0].round, 1u);
  EXPECT_EQ(a.gaps[1].round, 2u);
  EXPECT_EQ(a.gaps[0].rule, "aggregation.end -> synchronization.begin");
  EXPECT_FALSE(a.gaps[0].over);
  EXPECT_TRUE(a.verdicts.empty());
  EXPECT_NEAR(a.worst_seconds, 6.75, 1e-9);
}

TEST(PhaseGap, GapAboveTargetIsAVerdictForItsRound) {
  DetectorParams p;
  p.phase_gaps.push_back({"load", MarkEdge::kBegin, "aggregation", MarkEdge::kBegin, 60});
  auto marks = rounds_with_gaps({6.75, 12.5, 3});
  marks.insert(marks.begin() + 1, mark(MarkKind::kPhaseBegin, "load", 0, 1));
  const auto a = measure_phase_gaps(marks, p);
  ASSERT_EQ(a.gaps.size(), 4u);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, verdict_kind::kPhaseGap);
  EXPECT_EQ(a.verdicts[0].round, 2u);
  EXPECT_NEAR(a.verdicts[0].figures.at("seconds"), 12.5, 1e-9);
  EXPECT_NE(a.verdicts[0].summary.find("12.50 s"), std::string::npos) << a.verdicts[0].summary;
  EXPECT_EQ(a.gaps[3].rule, "load.begin -> aggregation.begin");
  EXPECT_NEAR(a.gaps[3].seconds, 9, 1e-9);
}

TEST(PhaseGap, NoMarksOpenGapsAndSupersededStarts) {
  DetectorParams p;
  EXPECT_TRUE(measure_phase_gaps({}, p).gaps.empty());
  // A run that ends mid-phase: aggregation ended, synchronization never began.
  std::vector<MarkRecord> marks{mark(MarkKind::kPhaseEnd, "aggregation", 1, 10),
                                mark(MarkKind::kRunEnd, "", 1, 11)};
  EXPECT_TRUE(measure_phase_gaps(marks, p).gaps.empty());
  // Two aggregation ends before a synchronization begin: the later one counts.
  marks = {mark(MarkKind::kPhaseEnd, "aggregation", 1, 10),
           mark(MarkKind::kPhaseEnd, "aggregation", 1, 20),
           mark(MarkKind::kPhaseBegin, "synchronization", 1, 22)};
  const auto a = measure_phase_gaps(marks, p);
  ASSERT_EQ(a.gaps.size(), 1u);
  EXPECT_NEAR(a.gaps[0].seconds, 2, 1e-9);
}

TEST(PhaseGap, WallClockJumpIsIgnored) {
  DetectorParams p;
  auto marks = rounds_with_gaps({6.75});
  for (auto& m : marks) {
    if (m.phase == "synchronization") m.reading.at.wall -= std::chrono::hours(1);
  }
  EXPECT_NEAR(measure_phase_gaps(marks, p).gaps.at(0).seconds, 6.75, 1e-9);
}

RunLedger ledger_killed_in_aggregation() {
  RunLedger l;
  l.info.target.pid = 4242;
  l.info.model_bytes = 2'500'000'000;
  l.marks = rounds_with_gaps({5});
  l.marks.push_back(mark(MarkKind::kPhaseBegin, "aggregation", 2, 80, 9'000'000'000));
  PhaseRecord load{"load", 1, at_seconds(1), at_seconds(5), 7'000'000'000, true};
  PhaseRecord agg{"aggregation", 2, at_seconds(80), std::nullopt, 0, false};
  l.phases = {load, agg};
  l.last.rss_bytes = 9'500'000'000;
  l.last.anon_bytes = 9'500'000'000;  // all anonymous
  l.peak_bytes = 11'000'000'000;
  return l;
}

// Scenario G: the coordinator is killed with signal 9 during aggregation.
TEST(Exit, KilledDuringAggregationNamesSignalPhaseAndLastReading) {
  const RunLedger l = ledger_killed_in_aggregation();
  const Verdict v = exited_verdict(l, std::nullopt, SIGKILL, false, at_seconds(90));
  EXPECT_EQ(v.kind, verdict_kind::kExited);
  EXPECT_EQ(v.severity, Severity::kCritical);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.phase, "aggregation");
  EXPECT_EQ(v.round, 2u);
  EXPECT_EQ(v.figures.at("signal"), 9);
  EXPECT_EQ(v.figures.at("last_rss_bytes"), 9.5e9);
  EXPECT_NEAR(v.figures.at("last_rss_copies"), 3.8, 1e-9);
  EXPECT_NE(v.summary.find("SIGKILL"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("during aggregation"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("9.50 GB"), std::string::npos) << v.summary;

  const Verdict oom = exited_verdict(l, std::nullopt, SIGKILL, true, at_seconds(90));
  EXPECT_EQ(oom.figures.at("oom_killed"), 1);
  EXPECT_NE(oom.summary.find("OOM"), std::string::npos) << oom.summary;
  const Verdict code = exited_verdict(l, 3, std::nullopt, false, at_seconds(90));
  EXPECT_EQ(code.figures.at("exit_code"), 3);
  EXPECT_NE(code.summary.find("exited with code 3"), std::string::npos) << code.summary;
}

TEST(Exit, NoMarksAtAllAndLostRuns) {
  RunLedger empty;
  const Verdict v = exited_verdict(empty, std::nullopt, std::nullopt, false, at_seconds(1));
  EXPECT_EQ(v.phase, "");
  EXPECT_EQ(v.round, 0u);
  EXPECT_EQ(v.figures.count("last_rss_copies"), 0u) << "model size unknown";
  EXPECT_NE(v.summary.find("status unknown"), std::string::npos);

  RunLedger after_round;
  after_round.marks = {mark(MarkKind::kRoundEnd, "", 4, 10)};
  EXPECT_EQ(run_position(after_round).round, 5u);

  const Verdict lost = lost_verdict(ledger_killed_in_aggregation(), at_seconds(500));
  EXPECT_EQ(lost.kind, verdict_kind::kLost);
  EXPECT_EQ(lost.phase, "aggregation");
  EXPECT_NE(lost.summary.find("PID 4242"), std::string::npos);
}

TEST(Budget, InputFromLedgerTakesTheLargestPhasePeak) {
  RunLedger l = ledger_killed_in_aggregation();
  l.peak_bytes = 0;
  const BudgetInput in = budget_input(l);
  EXPECT_EQ(in.peak_bytes, 9'500'000'000u) << "the last reading is above the load peak";
  EXPECT_EQ(in.phase, "") << "no phase holds the run's peak";
  l.phases[1].peak_bytes = 15'000'000'000;
  l.phases[1].peak_exact = true;
  const BudgetInput top = budget_input(l);
  EXPECT_EQ(top.peak_bytes, 15'000'000'000u);
  EXPECT_EQ(top.phase, "aggregation");
  EXPECT_TRUE(top.peak_exact);
  DetectorParams p;
  EXPECT_EQ(assess_budget(top, p).state, BudgetState::kHeadroom);
}

TEST(Budget, APeakInAPhaseTheRunNoLongerHoldsIsStillNamedFromItsTotals) {
  RunLedger l = ledger_killed_in_aggregation();
  l.peak_bytes = 15'000'000'000;
  l.earlier_phases = 40'000;
  l.earlier_phase_totals["load"] = {20'000, 2'000'000'000, 100};
  l.earlier_phase_totals["synchronization"] = {20'000, 15'000'000'000, 300};
  const BudgetInput in = budget_input(l);
  EXPECT_EQ(in.phase, "synchronization");
  EXPECT_EQ(in.peak_bytes, 15'000'000'000u);
  EXPECT_EQ(in.round, 0u) << "the totals do not say in which round";
}

}  // namespace
}  // namespace ramguard
