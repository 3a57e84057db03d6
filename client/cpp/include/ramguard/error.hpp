#pragma once
// The one exception type of libramguard. Every call that talks to the daemon throws it on
// failure; nothing else escapes the library's API (PhaseGuard's destructor throws nothing).

#include <stdexcept>
#include <string>

#include "ramguard.pb.h"

namespace ramguard {

class ClientError : public std::runtime_error {
 public:
  enum class Kind {
    kTransport,  // cannot connect, the connection broke; the message names the socket path
    kTimeout,    // no complete reply within the call's timeout
    kProtocol,   // the reply is oversized, not JSON, not a Reply, or answers another request
    kServer,     // the daemon answered with an error; code() holds its code
    kUsage,      // the caller passed something the library cannot send (e.g. no RAMGUARD_RUN)
  };

  ClientError(Kind kind, std::string message, v1::Error::Code code = v1::Error::CODE_UNSPECIFIED)
      : std::runtime_error(std::move(message)), kind_(kind), code_(code) {}

  Kind kind() const noexcept { return kind_; }
  // The daemon's error code for kServer, CODE_UNSPECIFIED otherwise.
  v1::Error::Code code() const noexcept { return code_; }

 private:
  Kind kind_;
  v1::Error::Code code_;
};

// "transport", "timeout", ...: for messages and logs.
const char* to_string(ClientError::Kind kind) noexcept;

}  // namespace ramguard
