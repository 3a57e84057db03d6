#pragma once
// Shared wording of verdict sentences: sizes in decimal GB, model copies when the model size
// is known, and one constructor so every detector fills a Verdict the same way.

#include <cstdint>
#include <map>
#include <string>

#include "model/verdict.hpp"

namespace ramguard {

// bytes / model_bytes, or a negative value when the model size is unknown (0).
double model_copies(double bytes, std::uint64_t model_bytes);

// " (1.28 model copies)" or "" when the model size is unknown; `per` is appended to "copies"
// (for example "/round").
std::string copies_note(double bytes, std::uint64_t model_bytes, const char* per = "");

// ", 1.28 model copies" or "" when the model size is unknown (inside parentheses).
std::string copies_clause(double bytes, std::uint64_t model_bytes);

// Adds figures[key] = copies when the model size is known.
void add_copies_figure(std::map<std::string, double>& figures, const char* key, double bytes,
                       std::uint64_t model_bytes);

Verdict make_verdict(const char* kind, Severity severity, bool passed, std::uint32_t round,
                     std::string phase, std::string summary, std::map<std::string, double> figures,
                     Instant at);

std::string fixed(double value, int decimals);

}  // namespace ramguard
