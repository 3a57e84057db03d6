#pragma once
// The memory budget and its reservations. Rule (docs/admission.md):
//   baseline + committed + estimate <= effective budget - margin
// admits and turns the estimate into a reservation; anything else refuses with every term.
// committed = for every active run max(its reservations, what its scope holds now) + every
// unclaimed reservation; effective budget = min(configured budget, the node's cap, the
// cgroup's limit), the caps the caller measured and passed in AdmitCaps.
// A reservation no run has claimed expires after the lease; a claimed one lives until its run
// ends (release_run) or is released by id.
//
// Thread safety: every public member takes one internal mutex, and admit() decides and reserves
// under it, so no interleaving of callers can overcommit the budget. The daemon calls it from a
// single io_context thread anyway; the guarantee does not depend on that.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "model/access.hpp"
#include "model/estimate_source.hpp"
#include "model/reservation.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

struct AdmitInput {
  std::string job;
  std::uint64_t estimate_bytes = 0;
  EstimateSource estimate_source;
  std::uint64_t baseline_bytes = 0;  // current RSS of the process that will load
  std::uint32_t owner_uid = 0;       // who may claim or release the reservation (and root)
};

// An active run and what its scope holds now (MemoryReading::counted_bytes of its newest
// reading). A run without a reservation counts with what it holds.
struct RunHolding {
  std::string run_id;
  std::uint64_t held_bytes = 0;
};

// What the machine allows, measured by the caller just before admit(); nullopt: not known.
struct AdmitCaps {
  std::optional<std::uint64_t> node_available_bytes;  // MemAvailable now
  std::optional<std::uint64_t> cgroup_limit_bytes;    // smallest limit up the Load's cgroup
  std::string cgroup_dir;                             // whose limit that is
};

// One run's term of the committed sum.
struct CommittedTerm {
  std::string run_id;
  std::uint64_t held_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t counted_bytes = 0;  // max(held, reserved)
};

// Which cap set the effective budget (the smallest; the configured one on ties).
// kUser: the owner's own cap (admission.max_reserved_per_user) refused what the budget allows.
// kSalvage: held after a salvage that lost runs or reservations (hold_for_a_lease).
enum class BudgetCap { kConfigured, kNode, kCgroup, kUser, kSalvage };
const char* cap_name(BudgetCap cap);  // "budget", "node", "cgroup", "user", "salvage"

struct Decision {
  bool admitted = false;
  std::string reservation_id;  // empty when refused
  std::uint64_t baseline_bytes = 0;
  std::uint64_t reserved_bytes = 0;  // sum of OTHER active reservations at decision time
  std::uint64_t estimate_bytes = 0;
  std::uint64_t budget_bytes = 0;  // the configured budget
  std::uint64_t margin_bytes = 0;
  std::int64_t headroom_bytes = 0;    // effective budget - margin - baseline - committed - estimate
  std::uint64_t committed_bytes = 0;  // runs at max(held, reserved) + unclaimed reservations
  std::uint64_t unclaimed_bytes = 0;  // reservations no run has claimed yet
  std::vector<CommittedTerm> runs;    // the runs' terms, in run id order
  std::uint64_t effective_budget_bytes = 0;
  BudgetCap binding_cap = BudgetCap::kConfigured;
  std::optional<std::uint64_t> node_available_bytes;
  std::uint64_t unallocated_bytes = 0;  // promised but not yet held: MemAvailable less it
  std::optional<std::uint64_t>
      node_cap_bytes;  // baseline + committed + (MemAvailable - unallocated)
  std::optional<std::uint64_t> cgroup_limit_bytes;
  std::string cgroup_dir;
  EstimateSource estimate_source;
  std::uint64_t owner_reserved_bytes = 0;  // the owner's other active reservations (under a cap)
  std::uint64_t user_cap_bytes = 0;        // the per-UID cap in force; 0: none
  std::string reason;                      // the whole sum in words, decimal GB
  double lease_seconds = 0;
};

class Admission {
 public:
  Admission(std::uint64_t budget_bytes, std::uint64_t margin_bytes, std::chrono::nanoseconds lease,
            const Clock& clock);

  // Decides and, when admitted, reserves estimate_bytes, all under one lock. Reservations
  // past their lease no longer count, even before expire() drops them.
  // `runs` are the active runs with what they hold now; `caps` what node and cgroup allow.
  Decision admit(const AdmitInput& input, const std::vector<RunHolding>& runs = {},
                 const AdmitCaps& caps = {});

  // The claim rule, in one place: `actor` may claim the reservation for `run_id` when it exists,
  // its lease has not run out, no other run holds it, and actor is its owner or privileged.
  // Returns it (its bytes and estimate source: the run's plan). Error kinds: kPermissionDenied
  // naming both UIDs, kFailedPrecondition for the rest, naming the reservation.
  Result<Reservation> claimable(const std::string& reservation_id, const std::string& run_id,
                                const Caller& actor) const;
  // A run claims an admitted reservation: from then on it does not expire by lease. Claiming
  // it again for the same run is a no-op. The same rule as claimable(), checked again under the
  // same lock that records the claim.
  Status claim(const std::string& reservation_id, const std::string& run_id, const Caller& actor);

  // Whether `actor` may claim or release the reservation (`verb`: "claim", "release"). Error
  // kinds: kNotFound for an unknown id, kPermissionDenied naming both UIDs.
  Status check_owner(const std::string& reservation_id, const Caller& actor,
                     const char* verb) const;

  // Ends one reservation; returns its bytes. Error when the id is unknown (or already gone).
  Result<std::uint64_t> release(const std::string& reservation_id);
  // The same, only for its owner or a privileged actor (check_owner), in one locked step.
  Result<std::uint64_t> release(const std::string& reservation_id, const Caller& actor);
  // Ends every reservation claimed by the run; returns the bytes freed (0 when it had none).
  std::uint64_t release_run(const std::string& run_id);

  // Drops unclaimed reservations older than the lease and returns them for logs and metrics.
  // Call it periodically (e.g. on the sampling timer).
  std::vector<Reservation> expire();

  std::uint64_t reserved_bytes() const;           // sum of active reservations
  std::vector<Reservation> reservations() const;  // active ones, oldest first

  // Configuration reload: existing reservations remain, even if they no longer fit.
  void set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes);
  void set_lease(std::chrono::nanoseconds lease);
  // Fairness: what one UID's reservations may add up to (0: no cap). Root's are not capped:
  // root is the operator. Existing reservations remain, even past a lowered cap.
  void set_user_cap(std::uint64_t bytes);
  std::uint64_t budget_bytes() const;
  std::uint64_t margin_bytes() const;
  std::chrono::nanoseconds lease() const;
  const Clock& clock() const { return clock_; }  // the one a reservation's times come from

  // After a ledger salvage that could not read every run and reservation the old file held:
  // admission refuses for one lease from now, when every unclaimed reservation that file may
  // have held has run out; the runs it lost still count through the node's MemAvailable.
  // `why` names what is not known and heads each refusal's reason meanwhile.
  void hold_for_a_lease(std::string why);
  bool holding() const;

  // Restart recovery: re-creates reservations the store kept, without a budget check (they
  // were admitted before). Unclaimed ones get a fresh lease from now: holding a little longer
  // is the safe side. Errors: empty or duplicate id, zero bytes.
  Status restore(const Reservation& reservation);

 private:
  // A reservation as admission holds it: the lease runs on the monotonic clock.
  struct Held : Reservation {
    std::chrono::nanoseconds created_monotonic{0};
    std::uint64_t order = 0;  // admission order, for listing
  };

  Result<Reservation> claimable_locked(const std::string& reservation_id, const std::string& run_id,
                                       const Caller& actor) const;
  Status check_owner_locked(const std::string& reservation_id, const Caller& actor,
                            const char* verb) const;

  bool expired_locked(const Held& r, const Instant& now) const;
  std::uint64_t reserved_locked(const Instant& now) const;
  void commit_locked(const std::vector<RunHolding>& runs, const Instant& now, Decision& d) const;
  Held held_locked(Reservation r, const Instant& now);
  Reservation view_locked(const Held& r) const;
  std::string new_id_locked();

  mutable std::mutex mutex_;
  std::uint64_t user_cap_bytes_ = 0;
  std::uint64_t budget_bytes_;
  std::uint64_t margin_bytes_;
  std::chrono::nanoseconds lease_;
  const Clock& clock_;
  std::map<std::string, Held> reservations_;
  std::uint64_t next_order_ = 0;
  std::mt19937_64 rng_;
  std::string hold_why_;  // empty: no hold
  std::chrono::nanoseconds hold_until_monotonic_{0};
};

}  // namespace ramguard
