#pragma once
// Who may hold how many control connections: a total cap, a share per unprivileged UID, and
// slots only root and the daemon's own UID can take, so no local user can lock out another
// one, or the operator, by opening (and idling on) many connections.

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "control/limits.hpp"
#include "control/peer.hpp"

namespace ramguard::control {

class ConnectionSlots {
 public:
  // Held for the life of a connection; gives its slot back when destroyed.
  class Slot {
   public:
    Slot(std::shared_ptr<ConnectionSlots> owner, uid_t key, bool unprivileged);
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    std::shared_ptr<ConnectionSlots> owner_;
    uid_t key_;
    bool unprivileged_;
  };

  explicit ConnectionSlots(uid_t daemon_uid) : daemon_uid_(daemon_uid) {}

  // A slot for `peer`, or the refusal to send it (naming the limit that was reached).
  static std::variant<std::unique_ptr<Slot>, std::string> take(
      const std::shared_ptr<ConnectionSlots>& self, const Peer& peer, const ServerLimits& limits);

  std::size_t total() const { return total_; }

 private:
  uid_t daemon_uid_;
  std::size_t total_ = 0;
  std::size_t unprivileged_ = 0;
  std::map<uid_t, std::size_t> per_uid_;  // unprivileged UIDs only; TCP peers share one key
};

}  // namespace ramguard::control
