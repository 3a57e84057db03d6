#include "verdicts/describe.hpp"

#include <cstdio>
#include <utility>

#include "ramguard/base/units.hpp"

namespace ramguard {

double model_copies(double bytes, std::uint64_t model_bytes) {
  if (model_bytes == 0) return -1;
  return bytes / static_cast<double>(model_bytes);
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string copies_note(double bytes, std::uint64_t model_bytes, const char* per) {
  if (model_bytes == 0) return "";
  return " (" + fixed(model_copies(bytes, model_bytes), 2) + " model copies" + per + ")";
}

std::string copies_clause(double bytes, std::uint64_t model_bytes) {
  if (model_bytes == 0) return "";
  return ", " + fixed(model_copies(bytes, model_bytes), 2) + " model copies";
}

void add_copies_figure(std::map<std::string, double>& figures, const char* key, double bytes,
                       std::uint64_t model_bytes) {
  if (model_bytes > 0) figures[key] = model_copies(bytes, model_bytes);
}

Verdict make_verdict(const char* kind, Severity severity, bool passed, std::uint32_t round,
                     std::string phase, std::string summary, std::map<std::string, double> figures,
                     Instant at) {
  Verdict v;
  v.kind = kind;
  v.severity = severity;
  v.passed = passed;
  v.round = round;
  v.phase = std::move(phase);
  v.summary = std::move(summary);
  v.figures = std::move(figures);
  v.at = at;
  return v;
}

}  // namespace ramguard
