#include <cstdlib>

#include "ramguard/client.hpp"

namespace ramguard {

Run::Run(Client& client, std::string run_id, v1::RunStartReply start)
    : client_(&client), run_id_(std::move(run_id)), start_(std::move(start)) {}

Run Run::attach(Client& client, std::string run_id) {
  if (run_id.empty()) {
    const char* from_env = std::getenv(protocol::kRunEnv);
    if (from_env != nullptr) run_id = from_env;
  }
  if (run_id.empty()) {
    throw ClientError(ClientError::Kind::kUsage,
                      "no run to attach to: pass a run id or set RAMGUARD_RUN (ramguard exec "
                      "sets it for the command it starts)");
  }
  return Run(client, std::move(run_id));
}

v1::MarkReply Run::mark(v1::MarkRequest::Kind kind, const std::string& phase, std::uint32_t round,
                        const MarkFacts& facts) {
  v1::Request request;
  v1::MarkRequest& mark = *request.mutable_mark();
  mark.set_run_id(run_id_);
  mark.set_kind(kind);
  mark.set_phase(phase);
  mark.set_round(round);
  if (facts.allocator) *mark.mutable_allocator() = *facts.allocator;
  if (facts.gc) *mark.mutable_gc() = *facts.gc;
  return client_->call(std::move(request)).mark();
}

v1::RunEndReply Run::end(const RunEndFacts& facts) {
  v1::Request request;
  v1::RunEndRequest& end = *request.mutable_run_end();
  end.set_run_id(run_id_);
  end.set_failure(facts.failure);
  if (facts.allocator) *end.mutable_allocator() = *facts.allocator;
  if (facts.gc) *end.mutable_gc() = *facts.gc;
  if (facts.trim) *end.mutable_trim() = *facts.trim;
  return client_->call(std::move(request)).run_end();
}

PhaseGuard::PhaseGuard(Run& run, std::string phase) : run_(&run), phase_(std::move(phase)) {
  begin_reply_ = run_->phase_begin(phase_);
}

PhaseGuard::PhaseGuard(PhaseGuard&& other) noexcept
    : run_(other.run_),
      phase_(std::move(other.phase_)),
      begin_reply_(std::move(other.begin_reply_)) {
  other.run_ = nullptr;
}

PhaseGuard::~PhaseGuard() {
  if (run_ == nullptr) return;
  try {
    run_->phase_end(phase_);
  } catch (...) {
    // Never throw from a destructor (it may run during unwinding); end() reports failures.
  }
}

v1::MarkReply PhaseGuard::end(const MarkFacts& facts) {
  if (run_ == nullptr) {
    throw ClientError(ClientError::Kind::kUsage, "phase '" + phase_ + "' was already ended");
  }
  Run* run = run_;
  run_ = nullptr;  // ended once, even if this mark fails
  return run->phase_end(phase_, facts);
}

}  // namespace ramguard
