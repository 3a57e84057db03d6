#include "metrics/job_label.hpp"

#include <cstdint>
#include <cstdio>

namespace ramguard {

std::string job_label(std::string_view job, JobNames mode) {
  if (mode == JobNames::kPlain) return std::string(job);
  if (mode == JobNames::kOmit) return {};
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a, 64 bits
  for (const char c : job) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  char text[16];
  std::snprintf(text, sizeof text, "h-%012llx",
                static_cast<unsigned long long>(hash >> 16));  // 48 bits: 12 hex digits
  return text;
}

}  // namespace ramguard
