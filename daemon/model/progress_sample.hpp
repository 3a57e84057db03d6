#pragma once
// One bucket of a run's downsampled trace, as the run hands it to observers and the ledger
// keeps it: the last reading of the bucket plus its lowest and highest RSS.

#include <cstdint>

namespace ramguard {

struct ProgressSample {
  std::int64_t at_unix_ms = 0;
  std::uint64_t rss_bytes = 0;
  std::uint64_t min_rss_bytes = 0;
  std::uint64_t max_rss_bytes = 0;
  std::uint64_t anon_bytes = 0;
  std::uint64_t file_bytes = 0;
  friend bool operator==(const ProgressSample&, const ProgressSample&) = default;
};

}  // namespace ramguard
