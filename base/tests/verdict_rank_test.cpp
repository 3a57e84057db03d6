// One order for "worst verdict": key by key, the latest among equals, and the SQL the ledger
// uses gives the same rank as the C++ for every combination.
#include "ramguard/base/verdict_rank.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <vector>

namespace ramguard {
namespace {

VerdictFacts facts(std::string_view kind, std::string_view severity, bool passed, bool cleared) {
  return {kind, severity, passed, cleared};
}

TEST(VerdictRank, KeysInOrderStandingSeverityFailedKindName) {
  // Standing beats cleared even when the cleared one is critical.
  EXPECT_TRUE(
      worse_verdict(facts("plateau", "info", true, false), facts("leak", "critical", false, true)));
  // Severity beats failed/passed.
  EXPECT_TRUE(
      worse_verdict(facts("odd", "warning", true, false), facts("odd", "info", false, false)));
  // Failed beats passed at the same severity.
  EXPECT_TRUE(worse_verdict(facts("release", "warning", false, false),
                            facts("release", "warning", true, false)));
  // Kind weight at the same severity and outcome: the process died before over budget.
  EXPECT_TRUE(worse_verdict(facts("exited", "critical", false, false),
                            facts("over_budget", "critical", false, false)));
  EXPECT_TRUE(worse_verdict(facts("leak", "critical", false, false),
                            facts("mystery", "critical", false, false)));
  // Unknown kinds never tie with each other: the name decides.
  EXPECT_TRUE(worse_verdict(facts("zeta", "warning", false, false),
                            facts("alpha", "warning", false, false)));
  // Equal verdicts are not worse than each other.
  EXPECT_FALSE(worse_verdict(facts("leak", "critical", false, false),
                             facts("leak", "critical", false, false)));
  // Unnamed severities rank below info.
  EXPECT_TRUE(worse_verdict(facts("x", "info", true, false), facts("x", "", true, false)));
}

TEST(VerdictRank, WorstIsTheLatestAmongEquals) {
  struct V {
    int id;
    VerdictFacts f;
  };
  const std::vector<V> list{{1, facts("growth_warning", "warning", false, false)},
                            {2, facts("plateau", "info", true, false)},
                            {3, facts("growth_warning", "warning", false, false)},
                            {4, facts("leak", "critical", false, true)}};
  auto worst = worst_verdict(list.begin(), list.end(), [](const V& v) { return v.f; });
  ASSERT_NE(worst, list.end());
  EXPECT_EQ(worst->id, 3);
  const std::vector<V> none;
  EXPECT_EQ(worst_verdict(none.begin(), none.end(), [](const V& v) { return v.f; }), none.end());
}

TEST(VerdictRank, SqlGivesTheSameRankForEveryCombination) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  const std::string sql =
      "SELECT " + verdict_rank_sql("v") +
      " FROM (SELECT ?1 AS kind, ?2 AS severity, ?3 AS passed, ?4 AS cleared) v";
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db) << "\n"
      << sql;
  int checked = 0;
  for (const char* kind :
       {"exited", "lost", "over_budget", "leak", "runaway", "release", "headroom", "growth_warning",
        "phase_gap", "estimate_accuracy", "growth_class", "plateau", "something_new"}) {
    for (const char* severity : {"info", "warning", "critical", "unspecified"}) {
      for (bool passed : {false, true}) {
        for (bool cleared : {false, true}) {
          sqlite3_reset(stmt);
          sqlite3_bind_text(stmt, 1, kind, -1, SQLITE_STATIC);
          sqlite3_bind_text(stmt, 2, severity, -1, SQLITE_STATIC);
          sqlite3_bind_int(stmt, 3, passed ? 1 : 0);
          sqlite3_bind_int(stmt, 4, cleared ? 1 : 0);
          ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
          EXPECT_EQ(sqlite3_column_int64(stmt, 0),
                    verdict_rank(facts(kind, severity, passed, cleared)))
              << kind << " " << severity << " passed=" << passed << " cleared=" << cleared;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 13 * 4 * 2 * 2);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

}  // namespace
}  // namespace ramguard
