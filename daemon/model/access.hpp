#pragma once
// Who asks and what they may do: the one place that answers it for runs, reservations and
// admissions. Changes (start, mark, end, claim, release) belong to the owner's UID or a
// privileged caller (root, a TCP peer with the token). Reads of other UIDs' work follow
// control.peers_read: `all` lets any member of the socket's group read everything, `own` (the
// default) only what its UID owns.

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace ramguard {

// Who asks, as the control server learned it (SO_PEERCRED, or the TCP token).
struct Caller {
  pid_t pid = 0;
  uid_t uid = 0;
  bool privileged = false;  // root, or a TCP peer with the token
};

enum class PeersRead { kAll, kOwn };

// May `caller` change what `owner_uid` owns?
inline bool may_change(const Caller& caller, std::uint32_t owner_uid) {
  return caller.privileged || caller.uid == owner_uid;
}

// What a caller may read of other UIDs' work.
struct ReadScope {
  bool everything = false;
  std::uint32_t uid = 0;
  bool covers(std::uint32_t owner_uid) const { return everything || owner_uid == uid; }
};

inline ReadScope read_scope(const Caller& caller, PeersRead peers_read) {
  return {caller.privileged || peers_read == PeersRead::kAll, caller.uid};
}

}  // namespace ramguard
