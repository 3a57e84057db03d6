#pragma once
// What runs publish. runs/ owns these interfaces; the store (durable ledger) and the metrics
// exporter implement them and app/ (the Daemon) plugs them in, so runs never call either directly.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.hpp"
#include "model/estimate_source.hpp"
#include "model/ledger.hpp"
#include "model/progress_sample.hpp"
#include "model/reading.hpp"
#include "model/reservation.hpp"
#include "model/verdict.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// A series of readings about one target, with or without a run (watched PIDs have none).
class TargetObserver {
 public:
  virtual ~TargetObserver() = default;
  // `timing`: what reading the target costs the daemon, this reading included.
  virtual void target_reading(const TargetRef& /*target*/, const MemoryReading& /*reading*/,
                              std::uint64_t /*peak_bytes*/, bool /*peak_exact*/,
                              const ReadTiming& /*timing*/) {}
  // readable=false: the target could not be read (reason says why: exited, unreadable).
  virtual void target_state(const TargetRef& /*target*/, bool /*readable*/,
                            std::string_view /*reason*/) {}
  // The target is no longer sampled; its series may be retired after the retention.
  virtual void target_retired(const TargetRef& /*target*/, Instant /*now*/) {}
};

// Everything a run does, in order. Methods returning Status report whether the change was
// recorded; a durable observer's failure makes the reply say `stored: false`.
class RunObserver : public TargetObserver {
 public:
  // True for the observer whose success makes a change durable (the ledger store).
  virtual bool durable() const { return false; }
  virtual Status run_started(const RunLedger& /*ledger*/) { return ok_status(); }
  // A mark and what it changed: the phase it opened or closed, or the boundary it created.
  virtual Status marked(const RunLedger& /*ledger*/, const MarkRecord& /*mark*/,
                        const PhaseRecord* /*phase*/, const BoundaryRecord* /*boundary*/) {
    return ok_status();
  }
  virtual Status boundary_settled(const RunLedger& /*ledger*/, const BoundaryRecord& /*boundary*/) {
    return ok_status();
  }
  virtual Status verdict(const RunLedger& /*ledger*/, const Verdict& /*verdict*/) {
    return ok_status();
  }
  // The client's census of its large objects, placed against the process's mappings.
  virtual Status census(const RunLedger& /*ledger*/, const CensusRecord& /*census*/) {
    return ok_status();
  }
  virtual void phase_gap(const RunLedger& /*ledger*/, std::string_view /*rule*/,
                         double /*seconds*/) {}
  virtual Status progress(const RunLedger& /*ledger*/, const ProgressSample& /*sample*/) {
    return ok_status();
  }
  // The run ended (ended, exited or lost); phases it closed were passed to marked() before.
  // The peak of a run that has ended was raised (ramguard exec's ru_maxrss came after the end).
  virtual Status peak_revised(const RunLedger& /*ledger*/) { return ok_status(); }
  virtual Status run_finished(const RunLedger& /*ledger*/,
                              const std::vector<const PhaseRecord*>& /*closed_phases*/) {
    return ok_status();
  }
  // Daemon-wide state that changes with runs.
  // by_owner: the active runs of each UID that has any.
  virtual void runs_active(std::size_t /*count*/,
                           const std::map<std::uint32_t, std::uint64_t>& /*by_owner*/) {}
  virtual Status reservations(const std::vector<Reservation>& /*rows*/,
                              std::uint64_t /*reserved_bytes*/) {
    return ok_status();
  }
  // A run start was refused by a cap: "runs" (control.max_runs, the node's) or "user"
  // (admission.max_active_runs_per_user, one UID's).
  virtual void run_refused(std::string_view /*cap*/, std::uint32_t /*owner_uid*/) {}
  // A durable write failed: the ledger is degraded.
  virtual void store_failed(std::string_view /*what*/, std::string_view /*reason*/) {}
};

}  // namespace ramguard
