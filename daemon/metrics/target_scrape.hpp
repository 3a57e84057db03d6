#pragma once
// One scrape's copy of every target's series: taken in one pass under the exporter's lock, then
// written family by family without it. Writing straight from the live targets meant a walk over
// a thousand scattered states per family, twelve per scrape, and most of a scrape's time went
// to those cache misses; the copy is contiguous, and sampling waits for one short copy only.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "metrics/target_families.hpp"
#include "metrics/target_series.hpp"

namespace ramguard {

class TargetScrape {
 public:
  void clear();
  void add(const TargetState& target);
  // One family, with its HELP and TYPE even when it has no series, in the text format.
  void write_family(TargetFamily family, std::string& out) const;

 private:
  struct Row {
    std::uint32_t labels_at = 0;  // in labels_: the job's labels, then ",run_id=..." if any
    std::uint32_t job_size = 0;
    std::uint32_t labels_size = 0;
    std::uint16_t present = 0;  // bit per HotSeries
    std::array<double, kHotSeriesCount> hot{};
  };
  std::vector<Row> rows_;
  std::string labels_;
  std::array<std::string, kTargetFamilyCount> others_;  // the other series, as written
};

}  // namespace ramguard
