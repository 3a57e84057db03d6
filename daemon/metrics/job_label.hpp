#pragma once
// How a job's name is shown in the ramguard_job label (metrics.job_names): every series of
// this node and the fleet history's queries to other nodes' series use this one rule.

#include <string>
#include <string_view>

#include "config/config.hpp"

namespace ramguard {

// The name, "h-" + 12 hex digits of its 64-bit FNV-1a hash (stable across nodes and restarts,
// so dashboards can still group), or "".
std::string job_label(std::string_view job, JobNames mode);

}  // namespace ramguard
