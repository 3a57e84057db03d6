#pragma once
// "Did you mean": the candidate closest to a misspelt word, shared by the CLI (subcommands,
// flags) and the daemon (a phase name its run's plan does not list).

#include <cstddef>
#include <string_view>
#include <vector>

namespace ramguard {

// Edit distance: insertions, deletions and substitutions, each costing one.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` within about a third of its length (at least one edit), the
// first one on a tie; empty when none is that near.
std::string_view closest_word(std::string_view word,
                              const std::vector<std::string_view>& candidates);

}  // namespace ramguard
