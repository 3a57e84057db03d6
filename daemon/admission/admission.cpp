#include "admission/admission.hpp"

#include <algorithm>
#include <cstdio>

#include "admission/reason.hpp"
#include "common/units.hpp"

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

bool Admission::expired_locked(const Reservation& r, const Instant& now) const {
  return r.run_id.empty() && now.monotonic - r.created.monotonic >= lease_;
}

std::uint64_t Admission::reserved_locked(const Instant& now) const {
  std::uint64_t total = 0;
  for (const auto& [id, r] : reservations_) {
    if (!expired_locked(r, now)) total += r.bytes;
  }
  return total;
}

ReservationView Admission::view_locked(const std::string& id, const Reservation& r,
                                       const Instant& now) const {
  ReservationView v{id, r.job, r.bytes, r.estimate_source, r.run_id, r.created, 0, r.owner_uid};
  if (r.run_id.empty()) {
    v.expires_in_seconds =
        std::max(0.0, to_seconds(lease_ - (now.monotonic - r.created.monotonic)));
  }
  return v;
}

std::string Admission::new_id_locked() {
  for (;;) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "rsv-%012llx",
                  static_cast<unsigned long long>(rng_() & 0xffffffffffffULL));
    if (!reservations_.contains(buf)) return buf;
  }
}

Decision Admission::admit(const AdmitInput& input) {
  std::lock_guard lock(mutex_);
  const Instant now = clock_.now();
  AdmissionSum sum{input.baseline_bytes, reserved_locked(now), input.estimate_bytes, budget_bytes_,
                   margin_bytes_};
  const AdmissionOutcome outcome = evaluate(sum);

  Decision d;
  d.admitted = outcome.fits;
  d.baseline_bytes = sum.baseline_bytes;
  d.reserved_bytes = sum.reserved_bytes;
  d.estimate_bytes = sum.estimate_bytes;
  d.budget_bytes = sum.budget_bytes;
  d.margin_bytes = sum.margin_bytes;
  d.headroom_bytes = outcome.headroom_bytes;
  d.estimate_source = input.estimate_source;
  d.reason = admission_reason(sum, outcome, input.estimate_source);
  d.lease_seconds = to_seconds(lease_);
  if (d.admitted) {
    d.reservation_id = new_id_locked();
    reservations_.emplace(d.reservation_id,
                          Reservation{input.job, input.estimate_bytes, input.estimate_source, "",
                                      now, next_order_++, input.owner_uid});
  }
  return d;
}

Status Admission::claim(const std::string& reservation_id, const std::string& run_id) {
  std::lock_guard lock(mutex_);
  if (run_id.empty()) return Error{"claim of reservation '" + reservation_id + "': empty run id"};
  auto it = reservations_.find(reservation_id);
  if (it == reservations_.end()) {
    return Error{"unknown reservation '" + reservation_id +
                 "': never admitted, already released, or expired"};
  }
  Reservation& r = it->second;
  if (expired_locked(r, clock_.now())) {
    return Error{"reservation '" + reservation_id + "' expired: no run claimed it within the " +
                 format_seconds(to_seconds(lease_)) + " lease; admit again"};
  }
  if (!r.run_id.empty() && r.run_id != run_id) {
    return Error{"reservation '" + reservation_id + "' is already claimed by run " + r.run_id};
  }
  r.run_id = run_id;
  return ok_status();
}

Status Admission::check_owner_locked(const std::string& reservation_id,
                                     const ReservationActor& actor, const char* verb) const {
  auto it = reservations_.find(reservation_id);
  if (it == reservations_.end()) {
    return Error{"unknown reservation '" + reservation_id +
                     "': never admitted, already released, or expired",
                 ErrorKind::kNotFound};
  }
  if (actor.privileged || actor.uid == it->second.owner_uid) return ok_status();
  return Error{"uid " + std::to_string(actor.uid) + " may not " + verb + " reservation " +
                   reservation_id + ": it was admitted for uid " +
                   std::to_string(it->second.owner_uid),
               ErrorKind::kPermissionDenied};
}

Status Admission::check_owner(const std::string& reservation_id, const ReservationActor& actor,
                              const char* verb) const {
  std::lock_guard lock(mutex_);
  return check_owner_locked(reservation_id, actor, verb);
}

Result<std::uint64_t> Admission::release(const std::string& reservation_id,
                                         const ReservationActor& actor) {
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

std::vector<ReservationView> Admission::expire() {
  std::lock_guard lock(mutex_);
  const Instant now = clock_.now();
  std::vector<ReservationView> gone;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (expired_locked(it->second, now)) {
      gone.push_back(view_locked(it->first, it->second, now));
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

std::vector<ReservationView> Admission::reservations() const {
  std::lock_guard lock(mutex_);
  const Instant now = clock_.now();
  // Sorted by admission order through pointers: the views are built once, in place.
  std::vector<const std::pair<const std::string, Reservation>*> ordered;
  for (const auto& entry : reservations_) {
    if (!expired_locked(entry.second, now)) ordered.push_back(&entry);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto* a, const auto* b) { return a->second.order < b->second.order; });
  std::vector<ReservationView> views;
  views.reserve(ordered.size());
  for (const auto* entry : ordered) views.push_back(view_locked(entry->first, entry->second, now));
  return views;
}

void Admission::set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes) {
  std::lock_guard lock(mutex_);
  budget_bytes_ = budget_bytes;
  margin_bytes_ = margin_bytes;
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

Status Admission::restore(const ReservationRecord& record) {
  std::lock_guard lock(mutex_);
  if (record.reservation_id.empty()) return Error{"restore: reservation id is empty"};
  if (record.bytes == 0) {
    return Error{"restore: reservation '" + record.reservation_id + "' has 0 bytes"};
  }
  if (reservations_.contains(record.reservation_id)) {
    return Error{"restore: reservation '" + record.reservation_id + "' already exists"};
  }
  reservations_.emplace(record.reservation_id,
                        Reservation{record.job, record.bytes, record.estimate_source, record.run_id,
                                    clock_.now(), next_order_++, record.owner_uid});
  return ok_status();
}

}  // namespace ramguard
