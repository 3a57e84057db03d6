#pragma once
// Tree scope: which processes a growth verdict's memory is in. The round-end marks of a `tree`
// run keep each process's counted memory (BoundaryRecord::processes); the last two settled
// boundaries that have them give each PID's change per round. A growth, leak or growth_class
// verdict then names the processes that grew ("worker 4242 python3 +40.0 MB/round") and the
// coordinator's own change, with a figure per process; other verdicts and other scopes are left
// as they are.

#include <cstdint>
#include <span>
#include <vector>

#include "model/ledger.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

struct ProcessGrowth {
  ProcessShare process;        // at the later boundary
  double bytes_per_round = 0;  // change of its counted memory (new processes: from 0)
};

// Each process of the later boundary with its change per round, largest growth first; empty
// when fewer than two settled boundaries carry processes.
std::vector<ProcessGrowth> growth_by_process(std::span<const BoundaryRecord> boundaries);

// Appends the attribution to `verdict` (kinds growth_warning, leak, growth_class).
void attribute_to_processes(std::span<const BoundaryRecord> boundaries, std::uint64_t model_bytes,
                            const DetectorParams& params, Verdict& verdict);

}  // namespace ramguard
