#include "ramguard/base/verdict_rank.hpp"

#include <array>

namespace ramguard {
namespace {

struct Weight {
  std::string_view name;
  int weight;
};

// Verdict kinds as written in the ledger and on the wire, worst first. A process that died
// ends the run; budget and leak threaten the host; the rest are warnings about a run that goes on.
constexpr std::array<Weight, 14> kKinds{{{"oom_kill", 14},
                                         {"failed", 13},
                                         {"exited", 12},
                                         {"lost", 11},
                                         {"over_budget", 10},
                                         {"leak", 9},
                                         {"runaway", 8},
                                         {"release", 7},
                                         {"headroom", 6},
                                         {"growth_warning", 5},
                                         {"phase_gap", 4},
                                         {"estimate_accuracy", 3},
                                         {"growth_class", 2},
                                         {"plateau", 1}}};

constexpr std::array<Weight, 3> kSeverities{{{"critical", 3}, {"warning", 2}, {"info", 1}}};

int lookup(const auto& table, std::string_view name) {
  for (const Weight& w : table) {
    if (w.name == name) return w.weight;
  }
  return 0;
}

// CASE <column> WHEN 'name' THEN weight ... ELSE 0 END, from the same table as lookup().
std::string sql_case(const auto& table, const std::string& column) {
  std::string out = "CASE " + column;
  for (const Weight& w : table) {
    out += " WHEN '" + std::string(w.name) + "' THEN " + std::to_string(w.weight);
  }
  return out + " ELSE 0 END";
}

constexpr std::int64_t kKindSpan = 16;  // above the largest kind weight

}  // namespace

int verdict_kind_weight(std::string_view kind) {
  return lookup(kKinds, kind);
}

std::int64_t verdict_rank(const VerdictFacts& v) {
  const std::int64_t standing = v.cleared ? 0 : 1;
  const std::int64_t severity = lookup(kSeverities, v.severity);
  const std::int64_t failed = v.passed ? 0 : 1;
  return ((standing * 4 + severity) * 2 + failed) * kKindSpan + verdict_kind_weight(v.kind);
}

bool worse_verdict(const VerdictFacts& a, const VerdictFacts& b) {
  const std::int64_t ra = verdict_rank(a);
  const std::int64_t rb = verdict_rank(b);
  if (ra != rb) return ra > rb;
  return a.kind > b.kind;
}

std::string verdict_rank_sql(std::string_view table) {
  const std::string t(table);
  return "(((CASE WHEN " + t + ".cleared THEN 0 ELSE 1 END) * 4 + " +
         sql_case(kSeverities, t + ".severity") + ") * 2 + (CASE WHEN " + t +
         ".passed THEN 0 ELSE 1 END)) * " + std::to_string(kKindSpan) + " + " +
         sql_case(kKinds, t + ".kind");
}

}  // namespace ramguard
