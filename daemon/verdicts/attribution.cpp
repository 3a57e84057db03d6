#include "verdicts/attribution.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

std::vector<ProcessGrowth> growth_by_process(std::span<const BoundaryRecord> boundaries) {
  const BoundaryRecord* later = nullptr;
  const BoundaryRecord* earlier = nullptr;
  for (auto it = boundaries.rbegin(); it != boundaries.rend(); ++it) {
    if (!it->settled || it->processes.empty()) continue;
    if (later == nullptr) {
      later = &*it;
    } else {
      earlier = &*it;
      break;
    }
  }
  if (later == nullptr || earlier == nullptr || later->round <= earlier->round) return {};
  const double rounds = static_cast<double>(later->round - earlier->round);
  std::map<pid_t, std::uint64_t> before;
  for (const ProcessShare& p : earlier->processes) before[p.pid] = p.counted_bytes;
  std::vector<ProcessGrowth> out;
  for (const ProcessShare& p : later->processes) {
    const auto was = before.find(p.pid);
    const double from = was == before.end() ? 0.0 : static_cast<double>(was->second);
    out.push_back({p, (static_cast<double>(p.counted_bytes) - from) / rounds});
  }
  std::stable_sort(out.begin(), out.end(), [](const ProcessGrowth& a, const ProcessGrowth& b) {
    return a.bytes_per_round > b.bytes_per_round;
  });
  return out;
}

void attribute_to_processes(std::span<const BoundaryRecord> boundaries, std::uint64_t model_bytes,
                            const DetectorParams& params, Verdict& verdict) {
  if (verdict.kind != verdict_kind::kGrowthWarning && verdict.kind != verdict_kind::kLeak &&
      verdict.kind != verdict_kind::kGrowthClass) {
    return;
  }
  const auto grown = growth_by_process(boundaries);
  if (grown.empty()) return;
  // Named: the processes that grew by a quarter of the per-round threshold or more (at most
  // five), and always the coordinator, so a flat coordinator is seen to be flat.
  const double named_from = 0.25 * static_cast<double>(params.growth_min_bytes);
  constexpr std::size_t kMostNamed = 5;
  std::string workers;
  std::string coordinator;
  std::size_t named = 0;
  for (const ProcessGrowth& g : grown) {
    const std::string text = std::to_string(g.process.pid) + " " + g.process.command + " " +
                             (g.bytes_per_round >= 0 ? "+" : "-") +
                             format_bytes(std::abs(g.bytes_per_round)) + "/round" +
                             copies_note(std::abs(g.bytes_per_round), model_bytes, "/round");
    if (g.process.root) {
      coordinator = "coordinator " + text;
      verdict.figures["coordinator_bytes_per_round"] = g.bytes_per_round;
      continue;
    }
    if (g.bytes_per_round < named_from || named == kMostNamed) continue;
    workers += (workers.empty() ? "" : ", ") + ("worker " + text);
    verdict.figures["process_" + std::to_string(g.process.pid) + "_bytes_per_round"] =
        g.bytes_per_round;
    ++named;
  }
  std::string text = workers.empty() ? "no other process of the tree grew" : workers;
  if (!coordinator.empty()) text += "; " + coordinator;
  verdict.figures["processes_grown"] = static_cast<double>(named);
  verdict.summary += " By process: " + text + ".";
}

}  // namespace ramguard
