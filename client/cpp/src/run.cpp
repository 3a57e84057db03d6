#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "ramguard/client.hpp"

namespace ramguard {
namespace {

std::int64_t unix_us_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr std::chrono::milliseconds kFirstBackoff{protocol::kRetryFirstMilliseconds};
constexpr std::chrono::milliseconds kMaxBackoff{protocol::kRetryMaxMilliseconds};

}  // namespace

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
  const auto timeout = client_->options().mark_timeout;
  // The mark's own time, and when this client stops waiting: the daemon drops it after that.
  const std::int64_t now_us = unix_us_now();
  mark.set_at_unix_us(now_us);
  mark.set_deadline_unix_us(now_us +
                            std::chrono::duration_cast<std::chrono::microseconds>(timeout).count());
  if (client_->options().guarded) return guarded_mark(std::move(request), timeout);
  return send_mark(std::move(request), timeout);
}

v1::MarkReply Run::send_mark(v1::Request request, std::chrono::milliseconds timeout) {
  v1::MarkRequest& mark = *request.mutable_mark();
  if (!mark_times_) {
    mark.clear_at_unix_us();
    mark.clear_deadline_unix_us();
  }
  v1::MarkReply reply;
  try {
    reply = client_->call(request, timeout).mark();
  } catch (const ClientError& e) {
    // A daemon from before the fields refuses them as unknown: send marks without from now on.
    if (!mark_times_ || e.code() != v1::Error::UNKNOWN_COMMAND) throw;
    mark_times_ = false;
    mark.clear_at_unix_us();
    mark.clear_deadline_unix_us();
    reply = client_->call(std::move(request), timeout).mark();
  }
  deliver(reply.verdicts());
  return reply;
}

// Never throws for the daemon's sake: a mark that cannot be delivered is counted and dropped,
// and what this process did meanwhile is what a resynchronisation restores.
v1::MarkReply Run::guarded_mark(v1::Request request, std::chrono::milliseconds timeout) {
  // In step as of before this mark, so the resynchronisation does not replay it.
  const bool ready_now = !gone_ && ready();
  note_mark(request.mark());
  const auto unheard = [&](const v1::MarkRequest& mark) {
    if (mark.kind() == v1::MarkRequest::PHASE_END) {
      left_unheard_us_.emplace(mark.phase(), mark.at_unix_us());  // the first time only
    }
    ++dropped_marks_;
  };
  if (!ready_now) {
    unheard(request.mark());
    return {};
  }
  try {
    return send_mark(request, timeout);
  } catch (const ClientError& e) {
    lost(e);
    unheard(request.mark());
    return {};
  }
}

void Run::note_mark(const v1::MarkRequest& mark) {
  if (mark.kind() == v1::MarkRequest::PHASE_BEGIN) {
    open_.insert(mark.phase());
    began_at_us_[mark.phase()] = mark.at_unix_us();
  } else if (mark.kind() == v1::MarkRequest::PHASE_END) {
    open_.erase(mark.phase());
    left_at_us_[mark.phase()] = mark.at_unix_us();
  }
}

bool Run::ready() {
  if (!needs_sync_) return true;
  if (std::chrono::steady_clock::now() < next_try_) return false;
  try {
    resync();
  } catch (const ClientError& e) {
    lost(e);
    return false;
  }
  return !gone_;
}

// The daemon's open phases made this process's: each phase it holds that this process left is
// ended at the time it was left; each this process is in that it does not hold is begun at the
// time it was entered. Rounds the daemon did not hear stay unheard (it counts the next ones).
void Run::resync() {
  v1::Request status_request;
  status_request.mutable_status()->set_run_id(run_id_);
  const auto timeout = client_->options().mark_timeout;
  const v1::StatusReply status = client_->call(status_request, timeout).status();
  if (status.runs().empty() || status.runs(0).state() != "active") {
    const std::string state = status.runs().empty() ? "unknown" : status.runs(0).state();
    warn("run " + run_id_ + ": ramguardd reports it " + state + "; further marks are dropped");
    gone_ = true;
    return;
  }
  std::set<std::string> held;
  for (const v1::PhaseStat& p : status.runs(0).phases()) {
    if (p.duration_seconds() == 0) held.insert(p.phase());
  }
  const auto resend = [&](v1::MarkRequest::Kind kind, const std::string& phase,
                          std::int64_t at_us) {
    v1::Request request;
    v1::MarkRequest& mark = *request.mutable_mark();
    mark.set_run_id(run_id_);
    mark.set_kind(kind);
    mark.set_phase(phase);
    if (mark_times_) mark.set_at_unix_us(at_us);  // when it happened; no deadline: it is late
    deliver(client_->call(std::move(request), timeout).mark().verdicts());
  };
  // A phase left unheard ends when it was first left, also when this process is in it again
  // (then it begins again below, at its latest begin): a phase as long as the outage would
  // be made up otherwise.
  std::set<std::string> ended;
  for (const std::string& phase : held) {
    const auto unheard = left_unheard_us_.find(phase);
    if (unheard == left_unheard_us_.end() &&
        (open_.count(phase) != 0 || left_at_us_.count(phase) == 0)) {
      continue;
    }
    warn("run " + run_id_ + ": ending phase " + phase +
         ", which this process left while ramguardd could not hear it");
    resend(v1::MarkRequest::PHASE_END, phase,
           unheard != left_unheard_us_.end() ? unheard->second : left_at_us_[phase]);
    ended.insert(phase);
  }
  left_unheard_us_.clear();
  for (const std::string& phase : open_) {
    if (held.count(phase) != 0 && ended.count(phase) == 0) continue;
    warn("run " + run_id_ + ": beginning phase " + phase +
         " again: ramguardd did not hear its begin");
    resend(v1::MarkRequest::PHASE_BEGIN, phase, began_at_us_[phase]);
  }
  needs_sync_ = false;
  backoff_ = kFirstBackoff;
  warn("run " + run_id_ + ": ramguardd answers again; " + std::to_string(dropped_marks_) +
       " marks were dropped meanwhile");
}

void Run::lost(const ClientError& error) {
  if (error.kind() == ClientError::Kind::kServer && error.code() == v1::Error::NOT_FOUND) {
    warn("run " + run_id_ + ": " + error.what() + "; further marks are dropped");
    gone_ = true;
    return;
  }
  if (!needs_sync_) {
    warn("run " + run_id_ + ": " + error.what() +
         "; training continues, marks are dropped until ramguardd answers (retrying with "
         "backoff)");
    backoff_ = kFirstBackoff;
  }
  needs_sync_ = true;
  next_try_ = std::chrono::steady_clock::now() + backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
}

void Run::warn(const std::string& line) const {
  const auto& on_warning = client_->options().on_warning;
  if (on_warning) {
    on_warning("ramguard: " + line);
  } else {
    std::fprintf(stderr, "ramguard: %s\n", line.c_str());
  }
}

std::vector<v1::Verdict> Run::deliver(
    const google::protobuf::RepeatedPtrField<v1::Verdict>& verdicts) {
  std::vector<v1::Verdict> fresh;
  for (const v1::Verdict& v : verdicts) {
    const std::string key = v.kind() + '\n' + std::to_string(v.round()) + '\n' +
                            std::to_string(v.at_unix_ms()) + '\n' + (v.cleared() ? "1" : "0") +
                            '\n' + v.summary();
    if (delivered_.insert(key).second) fresh.push_back(v);
  }
  const auto& on_verdict = client_->options().on_verdict;
  if (on_verdict) {
    for (const v1::Verdict& v : fresh) on_verdict(v);
  }
  return fresh;
}

// The release verdict is decided after the end (at the first reading back within the slack, or
// when the grace expires): ask for the run's verdicts until it is there or `wait` has passed.
void Run::await_release(v1::RunEndReply& reply, std::chrono::milliseconds wait) {
  const auto has_release = [&] {
    return std::any_of(reply.verdicts().begin(), reply.verdicts().end(),
                       [](const v1::Verdict& v) { return v.kind() == "release"; });
  };
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::chrono::milliseconds poll{100};
  while (!has_release() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        poll, std::max<std::chrono::nanoseconds>(std::chrono::nanoseconds(0),
                                                 deadline - std::chrono::steady_clock::now())));
    poll = std::min(poll * 2, std::chrono::milliseconds(1000));
    const v1::ReportReply report = client_->report(run_id_);
    for (v1::Verdict& v : deliver(report.run().verdicts())) *reply.add_verdicts() = std::move(v);
  }
}

v1::RunEndReply Run::end(const RunEndFacts& facts) {
  if (client_->options().guarded) {
    if (gone_ || !ready()) {
      warn("run " + run_id_ + ": not ended here: ramguardd " +
           (gone_ ? "ended it already" : "does not answer") +
           " (it ends a run whose process exits by itself)");
      return {};
    }
    try {
      return end_strict(facts);
    } catch (const ClientError& e) {
      warn("run " + run_id_ + ": the end was not delivered: " + e.what());
      return {};
    }
  }
  return end_strict(facts);
}

v1::RunEndReply Run::end_strict(const RunEndFacts& facts) {
  v1::Request request;
  v1::RunEndRequest& end = *request.mutable_run_end();
  end.set_run_id(run_id_);
  end.set_failure(facts.failure);
  if (facts.allocator) *end.mutable_allocator() = *facts.allocator;
  if (facts.gc) *end.mutable_gc() = *facts.gc;
  if (facts.trim) *end.mutable_trim() = *facts.trim;
  if (facts.exit_max_rss_bytes > 0) end.set_exit_max_rss_bytes(facts.exit_max_rss_bytes);
  v1::RunEndReply reply = client_->call(std::move(request)).run_end();
  deliver(reply.verdicts());
  const ClientOptions& options = client_->options();
  const auto wait = facts.release_wait.value_or(options.on_verdict ? options.release_wait
                                                                   : std::chrono::milliseconds(0));
  if (wait.count() > 0) await_release(reply, wait);
  return reply;
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
