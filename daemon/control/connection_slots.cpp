#include "control/connection_slots.hpp"

#include <algorithm>

namespace ramguard::control {
namespace {

// TCP peers have no UID: together they count as one unprivileged user.
constexpr uid_t kTcpKey = static_cast<uid_t>(-1);

}  // namespace

ConnectionSlots::Slot::Slot(std::shared_ptr<ConnectionSlots> owner, uid_t key, bool unprivileged)
    : owner_(std::move(owner)), key_(key), unprivileged_(unprivileged) {
  ++owner_->total_;
  if (unprivileged_) {
    ++owner_->unprivileged_;
    ++owner_->per_uid_[key_];
  }
}

ConnectionSlots::Slot::~Slot() {
  --owner_->total_;
  if (unprivileged_) {
    --owner_->unprivileged_;
    if (--owner_->per_uid_[key_] == 0) owner_->per_uid_.erase(key_);
  }
}

std::variant<std::unique_ptr<ConnectionSlots::Slot>, std::string> ConnectionSlots::take(
    const std::shared_ptr<ConnectionSlots>& self, const Peer& peer, const ServerLimits& limits) {
  const std::string total_limit = std::to_string(limits.max_connections);
  if (self->total_ >= limits.max_connections) {
    return "too many connections (limit " + total_limit + "); try again later";
  }
  const bool trusted = peer.credentials_known && (peer.uid == 0 || peer.uid == self->daemon_uid_);
  if (trusted) return std::make_unique<Slot>(self, peer.uid, false);

  const uid_t key = peer.credentials_known ? peer.uid : kTcpKey;
  const std::size_t reserved = std::min(limits.reserved_connections, limits.max_connections - 1);
  const std::size_t shared = limits.max_connections - reserved;
  if (self->unprivileged_ >= shared) {
    return "too many connections (limit " + total_limit + ", of which " + std::to_string(reserved) +
           " are kept for root); try again later";
  }
  const auto held = self->per_uid_.find(key);
  if (held != self->per_uid_.end() && held->second >= limits.max_connections_per_uid) {
    const std::string who = peer.credentials_known ? "uid " + std::to_string(peer.uid) : "TCP";
    return "too many connections from " + who + " (limit " +
           std::to_string(limits.max_connections_per_uid) + " per user); try again later";
  }
  return std::make_unique<Slot>(self, key, true);
}

}  // namespace ramguard::control
