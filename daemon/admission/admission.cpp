#include "admission/admission.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <utility>

#include "admission/reason.hpp"
#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

// Seeds from random_device so ids differ between daemon runs and cannot be guessed from
// the admission order.
std::mt19937_64 seeded_rng() {
  std::random_device device;
  std::seed_seq seq{device(), device(), device(), device()};
  return std::mt19937_64(seq);
}

}  // namespace

Admission::Admission(std::uint64_t budget_bytes, std::uint64_t margin_bytes,
                     std::chrono::nanoseconds lease, const Clock& clock)
    : budget_bytes_(budget_bytes),
      margin_bytes_(margin_bytes),
      lease_(lease),
      clock_(clock),
      rng_(seeded_rng()) {}

bool Admission::expired_locked(const Held& r, const Instant& now) const {
  return r.run_id.empty() && now.monotonic - r.created_monotonic >= lease_;
}

std::uint64_t Admission::reserved_locked(const Instant& now) const {
  std::uint64_t total = 0;
  for (const auto& [id, r] : reservations_) {
    if (!expired_locked(r, now)) total += r.bytes;
  }
  return total;
}

Admission::Held Admission::held_locked(Reservation r, const Instant& now) {
  r.created_wall_ms = unix_ms(now);
  Held held{std::move(r)};
  held.created_monotonic = now.monotonic;
  held.order = next_order_++;
  return held;
}

// The lease's end in wall time, from the lease in force (a reload may change it).
Reservation Admission::view_locked(const Held& r) const {
  Reservation view = r;
  view.expires_wall_ms = r.created_wall_ms + whole_ms(lease_);
  return view;
}

std::string Admission::new_id_locked() {
  for (;;) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "rsv-%012llx",
                  static_cast<unsigned long long>(rng_() & 0xffffffffffffULL));
    if (!reservations_.contains(buf)) return buf;
  }
}

const char* cap_name(BudgetCap cap) {
  switch (cap) {
    case BudgetCap::kNode:
      return "node";
    case BudgetCap::kCgroup:
      return "cgroup";
    case BudgetCap::kUser:
      return "user";
    case BudgetCap::kSalvage:
      return "salvage";
    case BudgetCap::kConfigured:
      break;
  }
  return "budget";
}

namespace {

std::uint64_t add_capped(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

std::string gb(std::uint64_t bytes) {
  return format_bytes(static_cast<double>(bytes));
}

// "run r-1 holds 2.02 GB, reserved 0.20 GB: counted 2.02 GB; unclaimed reservations 0.10 GB"
std::string committed_detail(const Decision& d) {
  std::string text;
  for (const CommittedTerm& t : d.runs) {
    if (!text.empty()) text += "; ";
    text += "run " + t.run_id + " holds " + gb(t.held_bytes) + ", reserved " +
            gb(t.reserved_bytes) + ": counted " + gb(t.counted_bytes);
  }
  if (!text.empty()) text += "; unclaimed reservations " + gb(d.unclaimed_bytes);
  return text;
}

std::string caps_text(const Decision& d) {
  std::string text = "configured " + gb(d.budget_bytes) + ", node ";
  if (d.node_cap_bytes) {
    text += gb(*d.node_cap_bytes) + " (baseline and committed " +
            gb(add_capped(d.baseline_bytes, d.committed_bytes)) + " + MemAvailable " +
            gb(*d.node_available_bytes) + " - unallocated reservations " + gb(d.unallocated_bytes) +
            ")";
  } else {
    text += "unknown";
  }
  text += ", cgroup ";
  text += d.cgroup_limit_bytes ? gb(*d.cgroup_limit_bytes) + " (" + d.cgroup_dir + ")" : "none";
  return text;
}

}  // namespace

void Admission::commit_locked(const std::vector<RunHolding>& runs, const Instant& now,
                              Decision& d) const {
  // Reservations per claiming run; what no run claimed counts as reserved.
  std::map<std::string_view, std::uint64_t> claimed;
  for (const auto& [id, r] : reservations_) {
    if (expired_locked(r, now)) continue;
    d.reserved_bytes = add_capped(d.reserved_bytes, r.bytes);
    if (r.run_id.empty()) {
      d.unclaimed_bytes = add_capped(d.unclaimed_bytes, r.bytes);
    } else {
      auto& sum = claimed[r.run_id];
      sum = add_capped(sum, r.bytes);
    }
  }
  std::map<std::string_view, std::uint64_t> held;
  for (const RunHolding& h : runs) held[h.run_id] = h.held_bytes;
  // Every run with a holding or a claimed reservation, in run id order (both maps are sorted).
  auto c = claimed.begin();
  auto h = held.begin();
  d.committed_bytes = d.unclaimed_bytes;
  d.unallocated_bytes = d.unclaimed_bytes;
  while (c != claimed.end() || h != held.end()) {
    CommittedTerm t;
    if (h == held.end() || (c != claimed.end() && c->first < h->first)) {
      t.run_id = std::string(c->first);
      t.reserved_bytes = (c++)->second;
    } else if (c == claimed.end() || h->first < c->first) {
      t.run_id = std::string(h->first);
      t.held_bytes = (h++)->second;
    } else {
      t.run_id = std::string(c->first);
      t.reserved_bytes = (c++)->second;
      t.held_bytes = (h++)->second;
    }
    t.counted_bytes = std::max(t.held_bytes, t.reserved_bytes);
    d.committed_bytes = add_capped(d.committed_bytes, t.counted_bytes);
    d.unallocated_bytes = add_capped(d.unallocated_bytes, t.counted_bytes - t.held_bytes);
    d.runs.push_back(std::move(t));
  }
}

Decision Admission::admit(const AdmitInput& input, const std::vector<RunHolding>& runs,
                          const AdmitCaps& caps) {
  std::lock_guard lock(mutex_);
  const Instant now = clock_.now();
  Decision d;
  commit_locked(runs, now, d);
  d.baseline_bytes = input.baseline_bytes;
  d.estimate_bytes = input.estimate_bytes;
  d.budget_bytes = budget_bytes_;
  d.margin_bytes = margin_bytes_;
  d.estimate_source = input.estimate_source;
  d.lease_seconds = to_seconds(lease_);

  // The caps, each as a budget for the same sum. The node's: what is counted now plus what
  // the node can still give (MemAvailable less what is promised but not yet allocated), so
  // the sum fits it exactly when estimate <= MemAvailable - unallocated - margin.
  d.effective_budget_bytes = budget_bytes_;
  if (caps.node_available_bytes) {
    d.node_available_bytes = caps.node_available_bytes;
    const std::uint64_t free_bytes = *caps.node_available_bytes > d.unallocated_bytes
                                         ? *caps.node_available_bytes - d.unallocated_bytes
                                         : 0;
    d.node_cap_bytes = add_capped(add_capped(d.baseline_bytes, d.committed_bytes), free_bytes);
    if (*d.node_cap_bytes < d.effective_budget_bytes) {
      d.effective_budget_bytes = *d.node_cap_bytes;
      d.binding_cap = BudgetCap::kNode;
    }
  }
  if (caps.cgroup_limit_bytes) {
    d.cgroup_limit_bytes = caps.cgroup_limit_bytes;
    d.cgroup_dir = caps.cgroup_dir;
    if (*caps.cgroup_limit_bytes < d.effective_budget_bytes) {
      d.effective_budget_bytes = *caps.cgroup_limit_bytes;
      d.binding_cap = BudgetCap::kCgroup;
    }
  }
  const bool measured = caps.node_available_bytes || caps.cgroup_limit_bytes;

  AdmissionSum sum;
  sum.baseline_bytes = input.baseline_bytes;
  sum.reserved_bytes = d.committed_bytes;
  sum.estimate_bytes = input.estimate_bytes;
  sum.budget_bytes = d.effective_budget_bytes;
  sum.margin_bytes = margin_bytes_;
  // Without holdings (callers that only book reservations) the sum is plain reservations.
  ReasonDetail detail;
  if (!runs.empty()) detail.committed_detail = committed_detail(d);
  if (measured) {
    detail.budget_cap = cap_name(d.binding_cap);
    detail.caps = caps_text(d);
  }
  const AdmissionOutcome outcome = evaluate(sum);
  d.admitted = outcome.fits;
  d.headroom_bytes = outcome.headroom_bytes;
  d.reason = admission_reason(sum, outcome, input.estimate_source.text(), detail);
  d.user_cap_bytes = input.owner_uid != 0 ? user_cap_bytes_ : 0;
  // Summed only under a cap: admissions are the hot path, and without one nothing reads it.
  if (d.user_cap_bytes != 0) {
    for (const auto& [id, r] : reservations_) {
      if (r.owner_uid == input.owner_uid && !expired_locked(r, now)) {
        d.owner_reserved_bytes = add_capped(d.owner_reserved_bytes, r.bytes);
      }
    }
  }
  if (d.admitted && d.user_cap_bytes != 0 &&
      add_capped(d.owner_reserved_bytes, input.estimate_bytes) > d.user_cap_bytes) {
    // The budget has room, but not this user's share of it.
    d.admitted = false;
    d.binding_cap = BudgetCap::kUser;
    d.reason = "refused by the user cap: uid " + std::to_string(input.owner_uid) +
               " holds reservations of " + gb(d.owner_reserved_bytes) + " + estimate " +
               gb(input.estimate_bytes) + " = " +
               gb(add_capped(d.owner_reserved_bytes, input.estimate_bytes)) +
               " > admission.max_reserved_per_user " + gb(d.user_cap_bytes) +
               " (the budget would have admitted it: " + d.reason + ")";
  }
  if (!hold_why_.empty() && now.monotonic < hold_until_monotonic_) {
    // What the old ledger reserved is not known: nothing is promised until it would have lapsed.
    d.admitted = false;
    d.binding_cap = BudgetCap::kSalvage;
    d.reason = "refused until what the old ledger reserved is known: " + hold_why_ +
               "; admission resumes in " +
               format_seconds(to_seconds(hold_until_monotonic_ - now.monotonic)) +
               ", one lease after the salvage, when any reservation it held has lapsed (" +
               d.reason + ")";
  }
  if (d.admitted) {
    d.reservation_id = new_id_locked();
    Reservation r;
    r.id = d.reservation_id;
    r.job = input.job;
    r.bytes = input.estimate_bytes;
    r.source = input.estimate_source;
    r.owner_uid = input.owner_uid;
    reservations_.emplace(d.reservation_id, held_locked(std::move(r), now));
  }
  return d;
}

void Admission::hold_for_a_lease(std::string why) {
  std::lock_guard lock(mutex_);
  hold_why_ = std::move(why);
  hold_until_monotonic_ = clock_.now().monotonic + lease_;
}

bool Admission::holding() const {
  std::lock_guard lock(mutex_);
  return !hold_why_.empty() && clock_.now().monotonic < hold_until_monotonic_;
}

Result<Reservation> Admission::claimable_locked(const std::string& reservation_id,
                                                const std::string& run_id,
                                                const Caller& actor) const {
  if (run_id.empty()) {
    return Error{"claim of reservation '" + reservation_id + "': empty run id",
                 ErrorKind::kFailedPrecondition};
  }
  if (Status owner = check_owner_locked(reservation_id, actor, "claim"); !owner) {
    const ErrorKind kind = owner.error().kind == ErrorKind::kPermissionDenied
                               ? ErrorKind::kPermissionDenied
                               : ErrorKind::kFailedPrecondition;
    return Error{owner.error().message, kind};
  }
  const auto it = reservations_.find(reservation_id);
  const Held& r = it->second;
  const Instant now = clock_.now();
  if (expired_locked(r, now)) {
    return Error{"reservation '" + reservation_id + "' expired: no run claimed it within the " +
                     format_seconds(to_seconds(lease_)) + " lease; admit again",
                 ErrorKind::kFailedPrecondition};
  }
  if (!r.run_id.empty() && r.run_id != run_id) {
    return Error{"reservation '" + reservation_id + "' is already claimed by run " + r.run_id,
                 ErrorKind::kFailedPrecondition};
  }
  return view_locked(r);
}

Result<Reservation> Admission::claimable(const std::string& reservation_id,
                                         const std::string& run_id, const Caller& actor) const {
  std::lock_guard lock(mutex_);
  return claimable_locked(reservation_id, run_id, actor);
}

Status Admission::claim(const std::string& reservation_id, const std::string& run_id,
                        const Caller& actor) {
  std::lock_guard lock(mutex_);
  if (auto ok = claimable_locked(reservation_id, run_id, actor); !ok) return ok.error();
  reservations_.find(reservation_id)->second.run_id = run_id;
  return ok_status();
}

Status Admission::check_owner_locked(const std::string& reservation_id, const Caller& actor,
                                     const char* verb) const {
  auto it = reservations_.find(reservation_id);
  if (it == reservations_.end()) {
    return Error{"unknown reservation '" + reservation_id +
                     "': never admitted, already released, or expired",
                 ErrorKind::kNotFound};
  }
  if (may_change(actor, it->second.owner_uid)) return ok_status();
  return Error{"uid " + std::to_string(actor.uid) + " may not " + verb + " reservation " +
                   reservation_id + ": it was admitted for uid " +
                   std::to_string(it->second.owner_uid),
               ErrorKind::kPermissionDenied};
}

Status Admission::check_owner(const std::string& reservation_id, const Caller& actor,
                              const char* verb) const {
  std::lock_guard lock(mutex_);
  return check_owner_locked(reservation_id, actor, verb);
}

Result<std::uint64_t> Admission::release(const std::string& reservation_id, const Caller& actor) {
  std::lock_guard lock(mutex_);
  if (auto s = check_owner_locked(reservation_id, actor, "release"); !s) return s.error();
  const auto it = reservations_.find(reservation_id);
  const std::uint64_t bytes = it->second.bytes;
  reservations_.erase(it);
  return bytes;
}

Result<std::uint64_t> Admission::release(const std::string& reservation_id) {
  std::lock_guard lock(mutex_);
  auto it = reservations_.find(reservation_id);
  if (it == reservations_.end()) {
    return Error{"unknown reservation '" + reservation_id +
                 "': never admitted, already released, or expired"};
  }
  const std::uint64_t bytes = it->second.bytes;
  reservations_.erase(it);
  return bytes;
}

std::uint64_t Admission::release_run(const std::string& run_id) {
  std::lock_guard lock(mutex_);
  if (run_id.empty()) return 0;  // unclaimed reservations carry an empty run id
  std::uint64_t freed = 0;
  std::erase_if(reservations_, [&](const auto& entry) {
    if (entry.second.run_id != run_id) return false;
    freed += entry.second.bytes;
    return true;
  });
  return freed;
}

std::vector<Reservation> Admission::expire() {
  std::lock_guard lock(mutex_);
  const Instant now = clock_.now();
  std::vector<Reservation> gone;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (expired_locked(it->second, now)) {
      gone.push_back(view_locked(it->second));
      it = reservations_.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

std::uint64_t Admission::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_locked(clock_.now());
}

std::vector<Reservation> Admission::reservations() const {
  std::lock_guard lock(mutex_);
  const Instant now = clock_.now();
  // Sorted by admission order through pointers: the views are built once, in place.
  std::vector<const std::pair<const std::string, Held>*> ordered;
  for (const auto& entry : reservations_) {
    if (!expired_locked(entry.second, now)) ordered.push_back(&entry);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto* a, const auto* b) { return a->second.order < b->second.order; });
  std::vector<Reservation> views;
  views.reserve(ordered.size());
  for (const auto* entry : ordered) views.push_back(view_locked(entry->second));
  return views;
}

void Admission::set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes) {
  std::lock_guard lock(mutex_);
  budget_bytes_ = budget_bytes;
  margin_bytes_ = margin_bytes;
}

void Admission::set_user_cap(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  user_cap_bytes_ = bytes;
}

void Admission::set_lease(std::chrono::nanoseconds lease) {
  std::lock_guard lock(mutex_);
  lease_ = lease;
}

std::uint64_t Admission::budget_bytes() const {
  std::lock_guard lock(mutex_);
  return budget_bytes_;
}

std::uint64_t Admission::margin_bytes() const {
  std::lock_guard lock(mutex_);
  return margin_bytes_;
}

std::chrono::nanoseconds Admission::lease() const {
  std::lock_guard lock(mutex_);
  return lease_;
}

Status Admission::restore(const Reservation& reservation) {
  std::lock_guard lock(mutex_);
  if (reservation.id.empty()) return Error{"restore: reservation id is empty"};
  if (reservation.bytes == 0) {
    return Error{"restore: reservation '" + reservation.id + "' has 0 bytes"};
  }
  if (reservations_.contains(reservation.id)) {
    return Error{"restore: reservation '" + reservation.id + "' already exists"};
  }
  reservations_.emplace(reservation.id, held_locked(reservation, clock_.now()));
  return ok_status();
}

}  // namespace ramguard
