#include "verdicts/census.hpp"

#include <cstdio>
#include <map>

#include "ramguard/base/units.hpp"

namespace ramguard {

namespace {

struct HolderSum {
  double bytes = 0;
  bool reachable = true;
  std::string cycle;
};

std::map<std::string, HolderSum> by_holder(const CensusRecord& c) {
  std::map<std::string, HolderSum> out;
  for (const CensusGroup& g : c.groups) {
    HolderSum& h = out[g.holder];
    h.bytes += static_cast<double>(g.bytes);
    if (!g.reachable) {
      h.reachable = false;
      if (h.cycle.empty()) h.cycle = g.cycle;
    }
  }
  return out;
}

std::string amount(double bytes, std::uint64_t model_bytes) {
  char buffer[64];
  if (model_bytes > 0) {
    const double copies = bytes / static_cast<double>(model_bytes);
    std::snprintf(buffer, sizeof buffer, "%.2f model %s", copies,
                  copies > 0.995 && copies < 1.005 ? "copy" : "copies");
    return buffer;
  }
  return format_bytes(bytes);
}

std::string held_by(const std::string& holder, bool reachable, const std::string& cycle) {
  std::string out = "held by `" + holder + "`";
  if (!reachable) {
    out += ", reachable only through a reference cycle";
    if (!cycle.empty()) out += " (" + cycle + ")";
  }
  return out;
}

}  // namespace

std::optional<HolderGrowth> holder_growth(std::span<const CensusRecord> censuses,
                                          std::uint32_t round) {
  const CensusRecord* cur = nullptr;
  const CensusRecord* prev = nullptr;
  for (const CensusRecord& c : censuses) {
    if (c.at_end || c.round > round) continue;
    if (cur == nullptr || c.round > cur->round) {
      prev = cur;
      cur = &c;
    } else if (c.round < cur->round && (prev == nullptr || c.round > prev->round)) {
      prev = &c;
    }
  }
  if (cur == nullptr || prev == nullptr || cur->round <= prev->round) return std::nullopt;
  const auto before = by_holder(*prev);
  const auto after = by_holder(*cur);
  std::optional<HolderGrowth> best;
  const double rounds = static_cast<double>(cur->round - prev->round);
  for (const auto& [holder, sum] : after) {
    const auto was = before.find(holder);
    const double grew = sum.bytes - (was == before.end() ? 0.0 : was->second.bytes);
    if (grew <= 0) continue;
    if (!best || grew / rounds > best->bytes_per_round) {
      best = HolderGrowth{holder, sum.reachable, sum.cycle, grew / rounds, prev->round, cur->round};
    }
  }
  return best;
}

std::string census_growth_clause(std::span<const CensusRecord> censuses, std::uint32_t round,
                                 std::uint64_t model_bytes) {
  if (auto g = holder_growth(censuses, round)) {
    return "Census rounds " + std::to_string(g->from_round) + "-" + std::to_string(g->to_round) +
           ": +" + amount(g->bytes_per_round, model_bytes) + " per round " +
           held_by(g->holder, g->reachable, g->cycle) + ".";
  }
  // One census: what only cycles keep, if anything.
  const CensusRecord* cur = nullptr;
  for (const CensusRecord& c : censuses) {
    if (!c.at_end && c.round <= round && (cur == nullptr || c.round > cur->round)) cur = &c;
  }
  if (cur == nullptr || cur->unreachable_bytes == 0) return {};
  const CensusGroup* largest = nullptr;
  for (const CensusGroup& g : cur->groups) {
    if (!g.reachable && (largest == nullptr || g.bytes > largest->bytes)) largest = &g;
  }
  if (largest == nullptr) return {};
  return "Census round " + std::to_string(cur->round) + ": " +
         amount(static_cast<double>(cur->unreachable_bytes), model_bytes) +
         " reachable only through reference cycles, the largest " +
         held_by(largest->holder, false, largest->cycle) + ".";
}

void name_holders(std::span<const CensusRecord> censuses, std::uint64_t model_bytes, Verdict& v) {
  if (censuses.empty() || v.cleared) return;
  if (v.kind != "growth_warning" && v.kind != "leak" && v.kind != "growth_class") return;
  const std::string clause = census_growth_clause(censuses, v.round, model_bytes);
  if (clause.empty()) return;
  v.summary += v.summary.empty() ? clause : " " + clause;
  if (auto g = holder_growth(censuses, v.round)) {
    v.figures["census_holder_bytes_per_round"] = g->bytes_per_round;
  }
}

std::string census_release_clause(std::span<const CensusRecord> censuses,
                                  std::uint64_t model_bytes) {
  const CensusRecord* end = nullptr;
  for (const CensusRecord& c : censuses) {
    if (c.at_end) end = &c;
  }
  if (end == nullptr || end->groups.empty()) return {};
  const CensusGroup& top = end->groups.front();
  std::string out =
      "The end's census: " + amount(static_cast<double>(end->host_bytes), model_bytes) +
      " of large objects still held, the largest " +
      amount(static_cast<double>(top.bytes), model_bytes) + " " +
      held_by(top.holder, top.reachable, top.cycle) + ".";
  return out;
}

}  // namespace ramguard
