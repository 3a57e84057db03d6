#pragma once
// Who is on the other end of a control connection. On the Unix socket the kernel tells us
// (SO_PEERCRED); a TCP peer is known only by the token it presented.

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace ramguard::control {

struct Peer {
  pid_t pid = 0;                       // 0: unknown (TCP)
  uid_t uid = static_cast<uid_t>(-1);  // unknown: nobody, never root
  bool credentials_known = false;      // SO_PEERCRED answered
  bool token_verified = false;         // a TCP peer: every request must carry the token
  std::string description;             // "pid 1234 uid 1000" or "tcp 127.0.0.1:5555"

  // Root, and TCP peers whose requests carry the token, act for any process. Anything else,
  // including a Peer nobody filled in, is unprivileged: fail closed.
  bool privileged() const { return credentials_known ? uid == 0 : token_verified; }
};

}  // namespace ramguard::control
