#pragma once
// What the client's censuses add to the verdicts: the holder whose bytes grew between the two
// newest censuses (growth), what was still held at the run's end (release), and the gap the
// report states. Pure functions of the ledger's censuses.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "model/census.hpp"
#include "model/verdict.hpp"

namespace ramguard {

// The holder whose bytes grew the most per round between the two newest censuses of rounds
// at or before ROUND (groups with the same holder summed); nullopt when fewer than two or none
// grew.
struct HolderGrowth {
  std::string holder;
  bool reachable = true;
  std::string cycle;
  double bytes_per_round = 0;
  std::uint32_t from_round = 0;
  std::uint32_t to_round = 0;
};
std::optional<HolderGrowth> holder_growth(std::span<const CensusRecord> censuses,
                                          std::uint32_t round);

// "+1.00 model copy per round held by `ns['previous']`, reachable only through a reference
// cycle (dict `ns` -> ...)"; without two censuses, the newest census's largest holder kept only
// by a cycle; "" when the censuses say nothing.
std::string census_growth_clause(std::span<const CensusRecord> censuses, std::uint32_t round,
                                 std::uint64_t model_bytes);

// Growth verdicts (growth_warning, leak, growth_class) get the clause appended to their
// summary and the holder's growth in their figures (census_holder_bytes_per_round).
void name_holders(std::span<const CensusRecord> censuses, std::uint64_t model_bytes, Verdict& v);

// The release verdict: what the end's census found still held (its largest holders).
std::string census_release_clause(std::span<const CensusRecord> censuses,
                                  std::uint64_t model_bytes);

}  // namespace ramguard
