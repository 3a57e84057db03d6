// What the censuses add to the verdicts: the holder whose bytes grew between two censuses,
// said in model copies with the cycle that keeps it; nothing without censuses.
#include "verdicts/census.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ramguard {
namespace {

constexpr std::uint64_t kModel = 346'270'624;

CensusGroup group(std::string holder, std::uint64_t bytes, bool reachable = true) {
  CensusGroup g;
  g.holder = std::move(holder);
  g.bytes = bytes;
  g.reachable = reachable;
  if (!reachable) g.cycle = "dict `ns` -> function `aggregate` -> `__globals__` is `ns`";
  return g;
}

CensusRecord census(std::uint32_t round, std::vector<CensusGroup> groups) {
  CensusRecord c;
  c.round = round;
  for (const CensusGroup& g : groups) {
    c.host_bytes += g.bytes;
    if (!g.reachable) c.unreachable_bytes += g.bytes;
  }
  c.groups = std::move(groups);
  return c;
}

std::vector<CensusRecord> baseline_rounds() {
  // Each round one more state in a namespace no root reaches (the FedAvg baseline).
  return {census(1, {group("coordinator.state", kModel)}),
          census(2, {group("coordinator.state", kModel), group("ns['previous']", kModel, false)}),
          census(3, {group("coordinator.state", kModel), group("ns['previous']", kModel, false),
                     group("ns['previous']", kModel, false)})};
}

TEST(CensusClause, NamesTheHolderThatGrewInModelCopies) {
  const auto censuses = baseline_rounds();
  auto g = holder_growth(censuses, 3);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->holder, "ns['previous']");
  EXPECT_FALSE(g->reachable);
  EXPECT_DOUBLE_EQ(g->bytes_per_round, static_cast<double>(kModel));
  EXPECT_EQ(census_growth_clause(censuses, 3, kModel),
            "Census rounds 2-3: +1.00 model copy per round held by `ns['previous']`, reachable "
            "only through a reference cycle (dict `ns` -> function `aggregate` -> `__globals__` "
            "is `ns`).");
}

TEST(CensusClause, AGrowthVerdictGetsTheClauseAndTheFigure) {
  const auto censuses = baseline_rounds();
  Verdict v;
  v.kind = "growth_warning";
  v.round = 2;
  v.summary = "Counted floor rose.";
  name_holders(censuses, kModel, v);
  EXPECT_EQ(v.summary.rfind("Counted floor rose. Census rounds 1-2: +1.00 model copy", 0), 0u)
      << v.summary;
  EXPECT_DOUBLE_EQ(v.figures.at("census_holder_bytes_per_round"), static_cast<double>(kModel));
  Verdict other;
  other.kind = "runaway";
  other.round = 2;
  name_holders(censuses, kModel, other);
  EXPECT_EQ(other.summary, "");
}

TEST(CensusClause, WithoutTwoCensusesOnlyWhatCyclesHold) {
  const std::vector<CensusRecord> one = {
      census(2, {group("coordinator.state", kModel), group("ns['previous']", kModel, false)})};
  EXPECT_FALSE(holder_growth(one, 2).has_value());
  EXPECT_EQ(census_growth_clause(one, 2, 0).find("Census round 2: 0.35 GB reachable only "
                                                 "through reference cycles"),
            0u);
  const std::vector<CensusRecord> flat = {census(1, {group("a", kModel)}),
                                          census(2, {group("a", kModel)})};
  EXPECT_EQ(census_growth_clause(flat, 2, kModel), "");
  Verdict v;
  v.kind = "growth_warning";
  v.round = 2;
  name_holders({}, kModel, v);
  EXPECT_EQ(v.summary, "");
}

TEST(CensusClause, TheReleaseNamesWhatTheEndsCensusHeld) {
  auto censuses = baseline_rounds();
  CensusRecord end = census(3, {group("ns['history']['result']", kModel, false)});
  end.at_end = true;
  censuses.push_back(end);
  EXPECT_EQ(census_release_clause(censuses, kModel),
            "The end's census: 1.00 model copy of large objects still held, the largest 1.00 "
            "model copy held by `ns['history']['result']`, reachable only through a reference "
            "cycle (dict `ns` -> function `aggregate` -> `__globals__` is `ns`).");
  EXPECT_EQ(census_release_clause(baseline_rounds(), kModel), "");
}

}  // namespace
}  // namespace ramguard
