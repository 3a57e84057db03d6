#pragma once
// What the control server hands each decoded request to. The server knows sockets and frames;
// the handler knows runs and admission and nothing about sockets.

#include <functional>

#include "control/peer.hpp"
#include "ramguard.pb.h"

namespace ramguard::control {

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Builds a handled request's reply: fills its result or its error into `reply`, whose envelope
  // (version, ids) the caller set. `durable`: whether the ledger writes the request made are
  // durable (false only when the group commit they waited for failed), so what the reply says
  // about its record is decided once, here, never rewritten.
  using Answer = std::function<void(v1::Reply& reply, bool durable)>;
  // Applies `request` at once (runs marked, reservations taken); the caller calls the returned
  // Answer once, after the group commit its writes wait for (see writes_pending).
  virtual Answer handle(const v1::Request& request, const Peer& peer) = 0;
  // Before handle: the handler may fetch what the request needs from elsewhere (an admission's
  // fleet history) and calls `ready` once, on the event loop, when handle can answer. Only this
  // request's connection waits; the loop goes on serving and sampling.
  virtual void prepare(const v1::Request& /*request*/, std::function<void()> ready) { ready(); }
  // Whether `request` goes through prepare first (the others are handled at once).
  virtual bool wants_prepare(const v1::Request& request) const { return request.has_admit(); }
  // Group commit: a handler may leave a request's ledger write pending. The caller then calls
  // flush_writes() before building that reply, once for all the requests of one loop turn.
  virtual bool writes_pending() const { return false; }
  // True when every pending write is durable: what each waiting request's Answer is given.
  virtual bool flush_writes() { return true; }
};

}  // namespace ramguard::control
