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
  // Fills the result or the error of `reply`; the envelope (version, ids) is set by the caller.
  virtual void handle(const v1::Request& request, const Peer& peer, v1::Reply& reply) = 0;
  // Before handle: the handler may fetch what the request needs from elsewhere (an admission's
  // fleet history) and calls `ready` once, on the event loop, when handle can answer. Only this
  // request's connection waits; the loop goes on serving and sampling.
  virtual void prepare(const v1::Request& /*request*/, std::function<void()> ready) { ready(); }
  // Whether `request` goes through prepare first (the others are handled at once).
  virtual bool wants_prepare(const v1::Request& request) const { return request.has_admit(); }
  // Group commit: a handler may leave a request's ledger write pending. The caller then calls
  // flush_writes() before sending that reply, once for all the requests of one loop turn.
  virtual bool writes_pending() const { return false; }
  // True when every pending write is durable; false: the caller calls writes_lost(reply) for
  // each reply that waited, so none claims a record that was rolled back.
  virtual bool flush_writes() { return true; }
  virtual void writes_lost(v1::Reply& /*reply*/) {}
};

}  // namespace ramguard::control
