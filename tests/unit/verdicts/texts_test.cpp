// Texts that add up: every figure a summary prints is the figure it names. The figures are
// parsed back out of the summaries and checked against each other and the verdict's figures:
// a growth step's two floors and their difference, the budget projection when the floor is
// already past the budget, an over-budget excess, and what a failed release holds.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "unit/verdicts/series_helpers.hpp"
#include "verdicts/attribution.hpp"
#include "verdicts/budget.hpp"
#include "verdicts/release.hpp"

namespace ramguard {
namespace {

using test::at_seconds;

// The sizes after `prefix` in `text`, in bytes, in order ("0.28 GB", "+40.0 MB", "912 kB").
std::vector<double> sizes_after(const std::string& text, const std::string& prefix) {
  const std::size_t at = text.find(prefix);
  if (at == std::string::npos) return {};
  static const std::regex size(R"(([0-9]+(?:\.[0-9]+)?) (B|kB|MB|GB|TB)\b)");
  std::vector<double> out;
  const std::string rest = text.substr(at + prefix.size());
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), size); it != std::sregex_iterator();
       ++it) {
    const std::string unit = (*it)[2];
    const double scale = unit == "TB"   ? 1e12
                         : unit == "GB" ? 1e9
                         : unit == "MB" ? 1e6
                         : unit == "kB" ? 1e3
                                        : 1;
    out.push_back(std::stod((*it)[1]) * scale);
  }
  return out;
}

// Printed values carry 2-3 significant decimals: equal within half a printed unit.
void expect_printed(double printed, double exact) {
  EXPECT_NEAR(printed, exact, std::max(0.006 * std::abs(exact), 5e6)) << printed << " vs " << exact;
}

BoundaryRecord boundary(std::uint32_t round, double anon_gb, double file_gb,
                        std::uint64_t allocated, std::uint64_t retained) {
  BoundaryRecord b;
  b.round = round;
  b.settled = true;
  b.reading.anon_bytes = static_cast<std::uint64_t>(anon_gb * 1e9);
  b.reading.file_bytes = static_cast<std::uint64_t>(file_gb * 1e9);
  b.reading.rss_bytes = b.reading.anon_bytes + b.reading.file_bytes;
  b.reading.at = at_seconds(60.0 * round);
  b.floor_bytes = b.reading.rss_bytes;
  b.allocator = AllocatorFacts{allocated, allocated, allocated + retained, retained};
  return b;
}

// The issue's figure: floors 2.14 -> 2.31 GB RSS printed with a +0.35 GB step of another
// measure. Now the printed floors are the judged ones and the step is their difference, with
// the page cache and the allocator's kept-free memory left out and said so.
TEST(TextsAddUp, AGrowthStepPrintsTwoJudgedFloorsAndTheirDifference) {
  DetectorParams p;
  p.growth_min_bytes = 100'000'000;
  p.budget_bytes = 20'000'000'000;
  std::vector<FloorPoint> floors{
      floor_point(boundary(1, 1.80, 0.34, 1'500'000'000, 100'000'000)),
      floor_point(boundary(2, 2.25, 0.06, 1'900'000'000, 150'000'000)),
  };
  const GrowthAssessment a = assess_growth(floors, {350'000'000, 0}, p);
  ASSERT_EQ(a.verdicts.size(), 1u);
  const Verdict& v = a.verdicts[0];
  const auto printed = sizes_after(v.summary, "rose from ");
  ASSERT_GE(printed.size(), 3u) << v.summary;
  const double from = v.figures.at("previous_growth_floor_bytes");
  const double to = v.figures.at("growth_floor_bytes");
  expect_printed(printed[0], from);
  expect_printed(printed[1], to);
  expect_printed(printed[2], to - from);
  EXPECT_NEAR(v.figures.at("step_bytes"), to - from, 1);
  expect_printed(printed[2], printed[1] - printed[0]);
  // The judged floors leave out the allocator's free bytes: named as the application floor,
  // with the counted floor beside it.
  EXPECT_NE(v.summary.find("Application floor (counted memory less what the allocator keeps free)"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("(counted floor "), std::string::npos) << v.summary;
}

TEST(TextsAddUp, TheBudgetProjectionSaysAlreadyPastWhenTheFloorIs) {
  DetectorParams p;
  p.growth_min_bytes = 100'000'000;
  p.budget_bytes = 1'600'000'000;
  std::vector<FloorPoint> floors{
      floor_point(boundary(1, 2.14, 0.1, 0, 0)),
      floor_point(boundary(2, 2.96, 0.1, 0, 0)),
  };
  for (auto& f : floors) f.allocator_free_bytes = 0;
  const GrowthAssessment a = assess_growth(floors, {350'000'000, 4}, p);
  ASSERT_EQ(a.verdicts.size(), 1u);
  const std::string& text = a.verdicts[0].summary;
  EXPECT_NE(text.find("already past the 1.60 GB budget"), std::string::npos) << text;
  EXPECT_EQ(text.find("is reached at about round"), std::string::npos) << text;
  const auto printed = sizes_after(text, "already past the ");
  ASSERT_GE(printed.size(), 2u) << text;
  expect_printed(printed[1], 2.96e9);
  EXPECT_GT(printed[1], printed[0]);
}

TEST(TextsAddUp, OverBudgetPrintsTheCountedFigureTheBudgetAndTheirDifference) {
  DetectorParams p;
  p.budget_bytes = 1'600'000'000;
  BudgetInput in;
  in.counted_bytes = 1'790'000'000;
  in.file_bytes = 700'000'000;
  in.peak_bytes = 1'790'000'000;
  const BudgetAssessment a = assess_budget(in, p);
  ASSERT_TRUE(a.verdict);
  const auto printed = sizes_after(a.verdict->summary, "counted memory (anon + shmem + swap) ");
  ASSERT_GE(printed.size(), 4u) << a.verdict->summary;
  expect_printed(printed[0], 1.79e9);
  expect_printed(printed[1], 1.6e9);
  expect_printed(printed[2], printed[0] - printed[1]);
  expect_printed(printed[3], 0.7e9);  // the page cache, named and not counted
  EXPECT_NE(a.verdict->summary.find("not counted"), std::string::npos);
}

TEST(TextsAddUp, AFailedReleaseHoldsWhatItPrintsAboveTheBaseline) {
  DetectorParams p;
  MemoryReading baseline;
  baseline.rss_bytes = baseline.anon_bytes = 400'000'000;
  std::vector<MemoryReading> after;
  for (double t = 100; t <= 130; t += 2) {
    MemoryReading r;
    r.at = at_seconds(t);
    r.anon_bytes = 1'940'000'000;
    r.file_bytes = 1'500'000'000;  // checkpoint page cache: shown, not held
    r.rss_bytes = r.anon_bytes + r.file_bytes;
    after.push_back(r);
  }
  ReleaseInput in{baseline,     at_seconds(100), after,       at_seconds(131),
                  std::nullopt, 350'000'000,     std::nullopt};
  const ReleaseAssessment a = assess_release(in, p);
  ASSERT_TRUE(a.verdict);
  const std::string& text = a.verdict->summary;
  const auto printed = sizes_after(text, "Release failed: ");
  ASSERT_GE(printed.size(), 4u) << text;
  expect_printed(printed[0], 1.94e9);  // counted still held
  expect_printed(printed[1], 1.5e9);   // page cache beside it
  expect_printed(printed[2], 1.54e9);  // above the baseline ...
  expect_printed(printed[3], 0.4e9);   // ... of
  expect_printed(printed[2], printed[0] - printed[3]);
  EXPECT_NEAR(a.verdict->figures.at("held_bytes"), 1.54e9, 1);
}

// Tree attribution: each process's change per round between the last two settled boundaries
// that carry processes, largest first; the coordinator and new processes included.
TEST(Attribution, GrowthPerProcessAndTheNamesAVerdictGets) {
  auto with = [](std::uint32_t round, std::vector<ProcessShare> processes) {
    BoundaryRecord b;
    b.round = round;
    b.settled = true;
    b.processes = std::move(processes);
    return b;
  };
  std::vector<BoundaryRecord> b{
      with(1, {{100, "python3", 500'000'000, true}, {4242, "python3", 100'000'000, false}}),
      with(2, {}),  // not a tree mark: skipped
      with(3, {{100, "python3", 501'000'000, true},
               {4242, "python3", 180'000'000, false},
               {4243, "dataloader", 30'000'000, false}}),
  };
  const auto g = growth_by_process(b);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].process.pid, 4242);
  EXPECT_NEAR(g[0].bytes_per_round, 40e6, 1);  // 80 MB over 2 rounds
  EXPECT_EQ(g[1].process.pid, 4243);           // new: from 0
  EXPECT_NEAR(g[1].bytes_per_round, 15e6, 1);
  EXPECT_NEAR(g[2].bytes_per_round, 0.5e6, 1);

  DetectorParams p;
  p.growth_min_bytes = 40'000'000;  // named from 10 MB/round
  Verdict v;
  v.kind = verdict_kind::kGrowthWarning;
  v.summary = "Counted floor rose.";
  attribute_to_processes(b, 200'000'000, p, v);
  EXPECT_NE(v.summary.find("worker 4242 python3 +40.0 MB/round (0.20 model copies/round)"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("worker 4243 dataloader +15.0 MB/round"), std::string::npos);
  EXPECT_NE(v.summary.find("coordinator 100 python3 +"), std::string::npos);
  EXPECT_EQ(v.figures.at("process_4242_bytes_per_round"), 40e6);
  Verdict other;
  other.kind = verdict_kind::kRelease;
  attribute_to_processes(b, 0, p, other);
  EXPECT_TRUE(other.summary.empty());
  EXPECT_TRUE(growth_by_process(std::span(b.data(), 2)).empty()) << "one tree mark only";
}

}  // namespace
}  // namespace ramguard
