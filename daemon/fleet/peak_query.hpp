#pragma once
// The fleet's peak on record for one job, as one PromQL instant query over every node's
// ramguard_job_peak_bytes (metrics/), and its answer read from the query API's JSON.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard {

// One node's largest peak of the job over the lookback, for one owner.
struct FleetPeak {
  std::uint32_t uid = 0;
  std::string node;  // the series' `node` label, else its `instance`
  std::uint64_t peak_bytes = 0;
};

// max by (uid, node, instance) (max_over_time(ramguard_job_peak_bytes{ramguard_job="J"}[L])):
// `job_label` is the label as every node exports it (metrics.job_names plain or hash).
std::string peak_promql(std::string_view job_label, std::chrono::nanoseconds lookback);

// "/api/v1/query?query=..." for `promql`.
std::string query_target(std::string_view promql);

// The vector of a successful /api/v1/query answer. Errors: not JSON, status "error" (with
// Prometheus's own message), not a vector. Series without a uid or a numeric value are skipped.
Result<std::vector<FleetPeak>> parse_peak_reply(const std::string& body);

}  // namespace ramguard
