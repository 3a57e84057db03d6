#pragma once
// Daemon values to protocol messages. One direction only: the daemon's types never depend on
// the protocol.

#include <cstddef>
#include <cstdint>

#include "model/ledger.hpp"
#include "ramguard.pb.h"
#include "store/records.hpp"

namespace ramguard::control {

void to_proto(const MemoryReading& reading, v1::Reading& out);
void to_proto(const Verdict& verdict, const std::string& run_id, v1::Verdict& out);
// How much of a run's history a reply lists (newest first kept); the rest is summarised.
struct ListLimits {
  std::size_t boundaries = SIZE_MAX;
  std::size_t phases = SIZE_MAX;
  std::size_t gaps = SIZE_MAX;
  std::size_t verdicts = SIZE_MAX;
};
// A status stays a few tens of KB however long the run: about 230 bytes of JSON a boundary.
// A run in memory holds at most 81 verdicts (RunParams::held_verdicts, 1.25x).
inline constexpr ListLimits kStatusLimits{100, 256, 100, 100};
// A report lists a run's history from the ledger, the newest 1,000 of each: at most about
// 1 MB of JSON, which a connection may hold unread beside its output bound, so the daemon's
// worst case stays a number (docs/measuring.md); the rest is summarised as in a status.
inline constexpr ListLimits kReportLimits{1'000, 1'000, 1'000, 1'000};

// The run as status/report show it; floors and gaps come from the ledger.
void to_proto(const RunLedger& ledger, v1::RunStatus& out, const ListLimits& limits = {});
// A run as a listing shows it: the headline figures and its worst verdict.
void to_proto(const RunSummary& summary, v1::RunStatus& out);

}  // namespace ramguard::control
