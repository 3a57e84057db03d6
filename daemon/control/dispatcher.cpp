#include "control/dispatcher.hpp"

#include <algorithm>
#include <utility>

#include "common/log.hpp"
#include "control/census_convert.hpp"
#include "control/codec.hpp"
#include "control/commands.hpp"
#include "control/convert.hpp"
#include "control/queries.hpp"
#include "control/request_checks.hpp"
#include "control/visibility.hpp"
#include "ramguard/base/protocol.hpp"
#include "ramguard/base/utf8.hpp"
#include "store/store.hpp"
#include "store/store_reader.hpp"
#include "verdicts/params.hpp"

namespace ramguard::control {
namespace {

v1::Error::Code code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return v1::Error::INVALID_ARGUMENT;
    case ErrorKind::kNotFound:
      return v1::Error::NOT_FOUND;
    case ErrorKind::kPermissionDenied:
      return v1::Error::PERMISSION_DENIED;
    case ErrorKind::kFailedPrecondition:
      return v1::Error::FAILED_PRECONDITION;
    case ErrorKind::kResourceExhausted:
      return v1::Error::RESOURCE_EXHAUSTED;
    case ErrorKind::kUnavailable:
      return v1::Error::UNAVAILABLE;
    case ErrorKind::kInternal:
      return v1::Error::INTERNAL;
    case ErrorKind::kDeadlineExceeded:
      return v1::Error::DEADLINE_EXCEEDED;
  }
  return v1::Error::INTERNAL;
}

Caller caller_of(const Peer& peer) {
  return Caller{peer.pid, peer.uid, peer.privileged()};
}

MarkKind mark_kind(v1::MarkRequest::Kind kind) {
  switch (kind) {
    case v1::MarkRequest::PHASE_BEGIN:
      return MarkKind::kPhaseBegin;
    case v1::MarkRequest::PHASE_END:
      return MarkKind::kPhaseEnd;
    case v1::MarkRequest::ROUND_END:
    default:  // check_request lets no other kind through
      return MarkKind::kRoundEnd;
  }
}

// Checked by check_request (request_checks.cpp).
AllocatorFacts allocator_facts(const v1::AllocatorStats& a) {
  return AllocatorFacts{a.allocated_bytes(), a.active_bytes(), a.resident_bytes(),
                        a.retained_bytes()};
}

}  // namespace

Dispatcher::Dispatcher(RunRegistry& registry, Admission& admission, AdmissionDesk& desk,
                       MachineState& machine, Store* store, PeersRead peers_read)
    : registry_(registry),
      admission_(admission),
      desk_(desk),
      machine_(machine),
      store_(store),
      peers_read_(peers_read) {}

Dispatcher::~Dispatcher() {
  *alive_ = false;
}

std::optional<PhaseRoom> Dispatcher::phase_room(const std::string& run_id) {
  // Only a run with a plan has a phase level to forecast; the others cost no read.
  const RunMachine* run = registry_.find(run_id);
  if (run == nullptr || run->ledger().state != RunState::kActive ||
      run->ledger().info.plan.empty()) {
    return std::nullopt;
  }
  AdmitCaps measured = machine_.caps(run->ledger().info.target.pid);
  return PhaseRoom{measured.node_available_bytes, measured.cgroup_limit_bytes,
                   std::move(measured.cgroup_dir)};
}

RequestHandler::Answer Dispatcher::handle(const v1::Request& request, const Peer& peer) {
  const Caller caller = caller_of(peer);
  v1::Reply reply;
  CommandCall call{request, peer, caller, reply, nullptr, std::nullopt, std::nullopt};
  std::shared_ptr<StoredReads> read;  // kept alive while the handler reads it
  if (auto it = read_ahead_.find(&request); it != read_ahead_.end()) {
    read = std::move(it->second);
    read_ahead_.erase(it);
  }
  call.read = read.get();
  if (request.has_mark()) {  // taken whatever handle() does with the request
    if (auto it = placed_ahead_.find(&request.mark()); it != placed_ahead_.end()) {
      call.placed = std::move(it->second);
      placed_ahead_.erase(it);
    }
  }
  const CommandSpec* spec = command_spec(request.command_case());
  Status result = check_request(request);
  if (result) {
    result = spec != nullptr ? (this->*spec->handler)(call)
                             : Error{"unknown command", ErrorKind::kInvalidArgument};
  }
  std::optional<ReplyStorage> storage = std::move(call.storage);
  if (!result) {
    reply.clear_result();
    *reply.mutable_error() = make_error(code_for(result.error().kind), result.error().message);
    log::debug("control.error", {{"peer", peer.description},
                                 {"command", command_name(request)},
                                 {"message", result.error().message}});
    storage.reset();
  }
  return [this, body = std::move(reply), storage = std::move(storage)](v1::Reply& out,
                                                                       bool durable) mutable {
    if (storage) set_storage(body, *storage, durable);
    body.MergeFrom(out);  // the caller's envelope (version, ids): small, and no result of its own
    out = std::move(body);
  };
}

void Dispatcher::set_storage(v1::Reply& reply, const ReplyStorage& storage, bool durable) const {
  // A batch that was rolled back: what its run wrote into it is not stored.
  const std::string lost = "the ledger commit failed: this record is not stored yet";
  const bool stored = storage.stored && durable;
  std::string warning = storage.warning;
  if (!stored) {
    if (storage.stored) warning = warning.empty() ? lost : warning + "; " + lost;
    warning = with_unstored_note(std::move(warning));
  }
  if (reply.has_mark()) {
    reply.mutable_mark()->set_stored(stored);
    reply.mutable_mark()->set_warning(std::move(warning));
  } else if (reply.has_run_end()) {
    reply.mutable_run_end()->set_stored(stored);
    reply.mutable_run_end()->set_warning(std::move(warning));
  } else if (reply.has_run_start()) {
    reply.mutable_run_start()->set_stored(stored);
    reply.mutable_run_start()->set_warning(std::move(warning));
  }
}

Status Dispatcher::hello(CommandCall& call) {
  v1::HelloReply& out = *call.reply.mutable_hello();
  out.set_protocol_version(kProtocolVersion);
  out.set_budget_bytes(admission_.budget_bytes());
  out.set_peer_pid(static_cast<std::uint32_t>(call.peer.pid));
  out.set_peer_uid(call.peer.uid);
  return ok_status();
}

Status Dispatcher::run_start(CommandCall& call) {
  const v1::RunStartRequest& in = call.request.run_start();
  v1::RunStartReply& out = *call.reply.mutable_run_start();
  ReplyStorage& storage = call.storage.emplace();
  StartRunInput input;
  input.pid = static_cast<pid_t>(in.pid());
  input.job = in.job();
  for (const auto& [k, v] : in.labels()) input.labels[k] = v;
  input.model_bytes = in.model_bytes();
  input.declared_rounds = in.declared_rounds();
  input.hosts = in.hosts();
  input.reservation_id = in.reservation_id();
  input.end_on_exit = in.end_on_exit();
  auto scope = parse_scope(in.scope());
  if (!scope) return scope.error();
  input.scope = *scope;
  input.cgroup_path = in.cgroup_path();
  auto started = registry_.start(input, call.caller);
  if (!started) return started.error();
  const RunLedger& ledger = **started;
  out.set_run_id(ledger.info.run_id);
  to_proto(ledger.baseline, *out.mutable_baseline());
  out.set_start_time_ticks(ledger.info.target.start_time_ticks);
  out.set_exact_peaks(ledger.peak_exact);
  const DetectorParams& configured = registry_.params().detectors;
  const DetectorParams resolved = resolve_model_copies(configured, ledger.info.model_bytes);
  out.set_thresholds(describe_thresholds(configured, ledger.info.model_bytes));
  out.set_growth_min_bytes(resolved.growth_min_bytes);
  out.set_runaway_bytes_per_second(resolved.runaway_bytes_per_second);
  out.set_release_slack_bytes(resolved.release_slack_bytes);
  const RunMachine* machine = registry_.find(ledger.info.run_id);
  storage.stored = registry_.stores_durably() && machine != nullptr && machine->store_ok();
  return ok_status();
}

std::string Dispatcher::with_unstored_note(std::string warning) const {
  std::string note = unstored_note_ ? unstored_note_() : std::string();
  if (note.empty() && store_ == nullptr) note = "no ledger: this run is guarded in memory only";
  if (note.empty()) return warning;
  return warning.empty() ? note : warning + "; " + note;
}

Status Dispatcher::mark(CommandCall& call) {
  const v1::MarkRequest& in = call.request.mark();
  v1::MarkReply& out = *call.reply.mutable_mark();
  ReplyStorage& storage = call.storage.emplace();
  const Caller& caller = call.caller;
  MarkInput input;
  input.run_id = in.run_id();
  input.kind = mark_kind(in.kind());
  input.phase = in.phase();
  input.round = in.round();
  if (in.at_unix_us() != 0) input.client_wall = std::chrono::microseconds(in.at_unix_us());
  // A deadline past what nanoseconds hold (year 2262) is no deadline: converted, it would wrap
  // into the past and drop the mark as late.
  if (in.deadline_unix_us() != 0 && in.deadline_unix_us() <= kMaxUnixUs) {
    input.deadline_wall = std::chrono::microseconds(in.deadline_unix_us());
  }
  if (in.has_allocator()) input.allocator = allocator_facts(in.allocator());
  if (in.has_gc()) {
    const auto& g = in.gc();
    input.gc = GcFacts{g.rss_before_bytes(), g.rss_after_bytes(), g.collected_objects(),
                       g.duration_seconds()};
  }
  std::optional<CensusRecord> census;
  if (in.has_census()) {
    auto c = census_from_proto(in.census(), "mark.census");
    if (!c) return c.error();
    census = std::move(*c);
  }
  if (input.kind == MarkKind::kPhaseBegin) input.room = phase_room(input.run_id);
  auto marked = registry_.mark(input, caller);
  if (!marked) return marked.error();
  std::string census_warning;
  if (census) {
    census->round = marked->mark.round;
    if (input.allocator) census->allocator_free_bytes = input.allocator->retained_bytes;
    // The mark is recorded: a census that cannot be kept is logged, the mark still answered.
    if (auto s = registry_.add_census(input.run_id, caller, std::move(*census),
                                      marked->mark.reading, std::move(call.placed));
        !s) {
      census_warning = "census not kept: " + s.error().message;
    }
  }
  to_proto(marked->mark.reading, *out.mutable_reading());
  out.set_round(marked->mark.round);
  out.set_phase_peak_bytes(marked->phase_peak_bytes);
  out.set_phase_duration_seconds(marked->phase_duration_seconds);
  out.set_peak_exact(marked->peak_exact);
  storage.stored = marked->stored;
  storage.warning = marked->warning;
  if (!census_warning.empty()) {
    storage.warning =
        storage.warning.empty() ? census_warning : storage.warning + "; " + census_warning;
  }
  for (const Verdict& v : marked->verdicts) to_proto(v, input.run_id, *out.add_verdicts());
  return ok_status();
}

Status Dispatcher::run_end(CommandCall& call) {
  const v1::RunEndRequest& in = call.request.run_end();
  v1::RunEndReply& out = *call.reply.mutable_run_end();
  ReplyStorage& storage = call.storage.emplace();
  const Caller& caller = call.caller;
  std::optional<EndFacts> facts;
  if (in.has_allocator() || in.has_gc() || in.has_trim()) {
    facts.emplace();
    if (in.has_allocator()) {
      facts->allocator = allocator_facts(in.allocator());
      facts->allocator_name = in.allocator().allocator();
    }
    if (in.has_gc()) {
      const auto& g = in.gc();
      facts->gc = GcFacts{g.rss_before_bytes(), g.rss_after_bytes(), g.collected_objects(),
                          g.duration_seconds()};
    }
    if (in.has_trim()) {
      const auto& t = in.trim();
      facts->trim = TrimFacts{t.rss_before_bytes(), t.rss_after_bytes(), t.duration_seconds()};
    }
  }
  if (in.has_census()) {
    auto census = census_from_proto(in.census(), "runEnd.census");
    if (!census) return census.error();
    census->at_end = true;
    if (facts && facts->allocator) census->allocator_free_bytes = facts->allocator->retained_bytes;
    // The end matters more than its census: one that cannot be kept is logged, the run ends.
    if (auto s = registry_.add_census(in.run_id(), caller, std::move(*census), std::nullopt); !s) {
      log::info("run.census_not_kept", {{"run", in.run_id()}, {"reason", s.error().message}});
    }
  }
  auto ended =
      registry_.end(in.run_id(), caller, in.failure(), std::move(facts), in.exit_max_rss_bytes());
  if (!ended) return ended.error();
  to_proto(ended->reading, *out.mutable_reading());
  out.set_peak_bytes(ended->peak_bytes);
  storage.stored = ended->stored;
  for (const Verdict& v : ended->verdicts) to_proto(v, in.run_id(), *out.add_verdicts());
  return ok_status();
}

namespace {

Result<AdmitAsk> admit_ask(const v1::AdmitRequest& in) {
  auto scope = parse_scope(in.scope());
  if (!scope) return scope.error();
  AdmitAsk ask;
  ask.job = in.job();
  ask.estimate_bytes = in.estimate_bytes();
  ask.plan = in.plan();
  ask.parameter_count = in.model().parameter_count();
  ask.bytes_per_parameter = in.model().bytes_per_parameter();
  ask.model_bytes = in.model().model_bytes();
  ask.hosts = in.hosts();
  ask.pid = static_cast<pid_t>(in.pid());
  ask.use_calibrated = in.use_calibrated();
  ask.scope = *scope;
  ask.allocator = in.allocator();
  return ask;
}

}  // namespace

bool Dispatcher::wants_prepare(const v1::Request& request) const {
  const CommandSpec* spec = command_spec(request.command_case());
  if (spec == nullptr) return false;
  switch (spec->prepare) {
    case CommandSpec::Prepare::kAdmission:
      return true;
    case CommandSpec::Prepare::kStoredReads:
      return reader_ != nullptr;  // without a reader the loop reads the store itself
    case CommandSpec::Prepare::kCensusPlacement:
      return request.has_mark() && request.mark().has_census();
    case CommandSpec::Prepare::kNone:
      return false;
  }
  return false;
}

void Dispatcher::prepare(const v1::Request& request, std::function<void()> ready) {
  const CommandSpec* spec = command_spec(request.command_case());
  // A request that breaks a rule has nothing to fetch: handle() answers with its error.
  const auto kind =
      spec == nullptr || !check_request(request) ? CommandSpec::Prepare::kNone : spec->prepare;
  switch (kind) {
    case CommandSpec::Prepare::kStoredReads:
      if (reader_ != nullptr) return prepare_stored_reads(request, std::move(ready));
      break;
    case CommandSpec::Prepare::kAdmission:
      return prepare_admission(request.admit(), std::move(ready));
    case CommandSpec::Prepare::kCensusPlacement:
      if (request.mark().has_census()) return prepare_census_placement(request.mark(), ready);
      break;
    case CommandSpec::Prepare::kNone:
      break;
  }
  ready();
}

void Dispatcher::prepare_census_placement(const v1::MarkRequest& in,
                                          const std::function<void()>& ready) {
  // Placed before the mark is applied and answered: the client waits for the reply, so its
  // process still holds what the census counted, and the loop serves others meanwhile. A
  // census handle() will refuse (invalid, not the caller's run) costs at
  // most the read of its ranges, capped like any census's; its placement is dropped.
  auto census = census_from_proto(in.census(), "mark.census");
  if (!census ||
      !registry_.place_ahead(in.run_id(), census_ranges(*census),
                             [this, alive = alive_, key = &in, ready](CensusPlacement p) {
                               if (!*alive) return;
                               placed_ahead_[key] = std::move(p);
                               ready();
                             })) {
    ready();  // handle() answers, placing on the loop if it keeps the census
  }
}

void Dispatcher::prepare_stored_reads(const v1::Request& request, std::function<void()> ready) {
  auto planned = plan_stored_reads(registry_, store_, request);
  if (!planned) {
    ready();  // memory answers, or handle() refuses the request
    return;
  }
  auto read = std::make_shared<StoredReads>(std::move(*planned));
  read_ahead_[&request] = read;
  reader_->post([read, params = registry_.params().detectors,
                 ready = std::move(ready)](LedgerQueries& ledger) mutable {
    read_stored(ledger, params, *read);
    ready();  // posts the request's resumption to the loop
    ready = nullptr;
  });
}

void Dispatcher::prepare_admission(const v1::AdmitRequest& in, std::function<void()> ready) {
  auto ask = admit_ask(in);
  if (!ask) {
    ready();
    return;
  }
  desk_.prepare(*ask, std::move(ready));
}

Status Dispatcher::admit(CommandCall& call) {
  const v1::AdmitRequest& in = call.request.admit();
  v1::AdmitReply& out = *call.reply.mutable_admit();
  const auto ask = admit_ask(in);
  if (!ask) return ask.error();
  auto outcome = desk_.admit(*ask, call.caller);
  if (!outcome) return outcome.error();
  const Decision& d = outcome->decision;
  const pid_t pid = outcome->pid;
  const std::uint32_t owner_uid = outcome->owner_uid;
  out.set_admitted(d.admitted);
  out.set_reservation_id(d.reservation_id);
  out.set_baseline_bytes(d.baseline_bytes);
  out.set_reserved_bytes(d.reserved_bytes);
  out.set_estimate_bytes(d.estimate_bytes);
  out.set_budget_bytes(d.budget_bytes);
  out.set_margin_bytes(d.margin_bytes);
  out.set_headroom_bytes(d.headroom_bytes);
  out.set_estimate_source(d.estimate_source.text());
  out.set_reason(outcome->reason);
  out.set_lease_seconds(d.lease_seconds);
  out.set_committed_bytes(d.committed_bytes);
  for (const CommittedTerm& t : d.runs) {
    auto* run = out.add_committed_runs();
    run->set_run_id(t.run_id);
    run->set_held_bytes(t.held_bytes);
    run->set_reserved_bytes(t.reserved_bytes);
    run->set_counted_bytes(t.counted_bytes);
  }
  out.set_effective_budget_bytes(d.effective_budget_bytes);
  out.set_budget_cap(cap_name(d.binding_cap));
  out.set_node_available_bytes(d.node_available_bytes.value_or(0));
  out.set_unallocated_bytes(d.unallocated_bytes);
  out.set_node_cap_bytes(d.node_cap_bytes.value_or(0));
  out.set_cgroup_limit_bytes(d.cgroup_limit_bytes.value_or(0));
  out.set_cgroup_dir(d.cgroup_dir);
  if (d.admitted) reservations_changed();
  log::info("admission", {{"job", in.job()},
                          {"admitted", d.admitted},
                          {"pid", pid},
                          {"owner_uid", owner_uid},
                          {"reservation", d.reservation_id},
                          {"estimate_bytes", d.estimate_bytes},
                          {"source", d.estimate_source.text()},
                          {"reason", out.reason()}});
  return ok_status();
}

Status Dispatcher::release(CommandCall& call) {
  auto released = admission_.release(call.request.release().reservation_id(), call.caller);
  if (!released) return released.error();
  call.reply.mutable_release()->set_released_bytes(*released);
  reservations_changed();  // the metrics hear it as the registry's observer
  return ok_status();
}

void Dispatcher::reservations_changed() {
  if (group_commit_) {
    reservations_dirty_ = true;
  } else {
    registry_.sync_reservations();
  }
}

void Dispatcher::set_group_commit(bool on) {
  group_commit_ = on;
  if (store_ != nullptr) store_->set_batching(on);
}

bool Dispatcher::writes_pending() const {
  return reservations_dirty_ || (store_ != nullptr && store_->batch_open());
}

bool Dispatcher::flush_writes() {
  if (reservations_dirty_) {
    reservations_dirty_ = false;
    registry_.sync_reservations();  // one transaction for every change since the last flush
  }
  if (store_ == nullptr) return true;
  // The marks, starts and ends served this turn: their replies wait for this COMMIT. A failed
  // one is logged by the store's write health; the runs learn it through the lost listener.
  return store_->commit_batch().ok();
}

Status Dispatcher::status(CommandCall& call) {
  const v1::StatusRequest& in = call.request.status();
  v1::StatusReply& out = *call.reply.mutable_status();
  const ReadScope scope = read_scope(call.caller, peers_read_);
  out.set_budget_bytes(admission_.budget_bytes());
  out.set_margin_bytes(admission_.margin_bytes());
  out.set_reserved_bytes(admission_.reserved_bytes());
  const Store* store = store_;
  out.set_store_available(store != nullptr);
  out.set_store_writable(store != nullptr && store->writable());
  if (store == nullptr) {
    out.set_store_state("unavailable: runs are guarded in memory only");
  } else if (!store->writable()) {
    out.set_store_state(std::string(store->opened_read_only() ? "read-only" : "unwritable") + ": " +
                        store->unwritable_reason());
  } else {
    out.set_store_state("writable");
  }
  const auto add_run = [&](const RunLedger& ledger) {
    auto* run = out.add_runs();
    to_proto(ledger, *run, kStatusLimits);
    add_gaps(ledger, registry_.params().detectors, *run, kStatusLimits.gaps);
    // The newest census, its largest holder only: the status line, and a status stays small.
    if (!ledger.censuses.empty()) {
      v1::RoundCensus& census = *run->add_censuses();
      to_proto(ledger.censuses.back(), census);
      auto& groups = *census.mutable_census()->mutable_groups();
      if (groups.size() > 1) groups.DeleteSubrange(1, groups.size() - 1);
    }
  };
  if (!in.run_id().empty()) {
    // A run in memory is read in place: a status costs the same at round 10,000 as at 10.
    if (const RunMachine* r = registry_.find(in.run_id())) {
      if (auto s = check_read(scope, r->ledger()); !s) return s;
      add_run(r->ledger());
    } else {
      auto ledger = find_ledger(registry_, store_, in.run_id());
      if (!ledger) return ledger.error();
      if (auto s = check_read(scope, *ledger); !s) return s;
      add_run(*ledger);
    }
  } else {
    for (const RunMachine* r : registry_.runs()) {
      if (scope.covers(r->ledger().info.owner_uid)) add_run(r->ledger());
    }
  }
  const std::int64_t now_wall_ms = unix_ms(admission_.clock().now());
  for (const Reservation& r : admission_.reservations()) {
    if (!scope.covers(r.owner_uid)) continue;
    auto* rv = out.add_reservations();
    rv->set_reservation_id(r.id);
    rv->set_job(r.job);
    rv->set_bytes(r.bytes);
    rv->set_run_id(r.run_id);
    rv->set_expires_in_seconds(lease_left_seconds(r, now_wall_ms));
    rv->set_owner_uid(r.owner_uid);
  }
  return ok_status();
}

Status Dispatcher::report(CommandCall& call) {
  const v1::ReportRequest& in = call.request.report();
  v1::ReportReply& out = *call.reply.mutable_report();
  StoredReads* read = call.read;
  const ReadScope scope = read_scope(call.caller, peers_read_);
  if (read != nullptr) {
    if (auto it = read->runs.find(in.run_id()); it != read->runs.end()) {
      StoredRead& r = it->second;
      if (!r.status) return r.status.error();
      RunLedger owner;
      owner.info = std::move(r.info);
      if (auto s = check_read(scope, owner); !s) return s;
      out = std::move(r.report);
      if (in.include_samples() && !r.samples) {
        if (const RunMachine* run = registry_.find(in.run_id())) add_held_samples(*run, out);
      }
      return ok_status();
    }
  }
  auto ledger = find_ledger(registry_, store_, in.run_id(), /*complete=*/true);
  if (!ledger) return ledger.error();
  if (auto s = check_read(scope, *ledger); !s) return s;
  fill_report(registry_, store_, *ledger, in.include_samples(), out);
  return ok_status();
}

Status Dispatcher::compare(CommandCall& call) {
  const v1::CompareRequest& in = call.request.compare();
  v1::CompareReply& out = *call.reply.mutable_compare();
  StoredReads* read = call.read;
  const ReadScope scope = read_scope(call.caller, peers_read_);
  std::vector<std::string> ids(in.run_ids().begin(), in.run_ids().end());
  if (!in.labels().empty()) {
    if (store_ == nullptr) {
      return Error{"comparing by label needs the ledger database, which is unavailable",
                   ErrorKind::kUnavailable};
    }
    std::map<std::string, std::string> labels(in.labels().begin(), in.labels().end());
    auto found = store_->find_runs_by_labels(labels, protocol::kMaxCompareRuns);
    if (!found) return Error{found.error().message, ErrorKind::kUnavailable};
    for (auto it = found->rbegin(); it != found->rend(); ++it) {
      if (scope.covers(it->info.owner_uid)) ids.push_back(it->info.run_id);
    }
  }
  if (ids.empty()) return Error{"compare needs run ids or labels"};
  for (const auto& id : ids) {
    if (read != nullptr) {
      if (auto it = read->runs.find(id); it != read->runs.end()) {
        const StoredRead& r = it->second;
        if (!r.status) return r.status.error();
        RunLedger owner;
        owner.info = r.info;
        if (auto s = check_read(scope, owner); !s) return s;
        *out.add_rows() = r.row;
        continue;
      }
    }
    auto ledger = find_ledger(registry_, store_, id, /*complete=*/true);
    if (!ledger) return ledger.error();
    if (auto s = check_read(scope, *ledger); !s) return s;
    v1::CompareRow& row = *out.add_rows();
    fill_compare_row(*ledger, registry_.params().detectors, row);
    add_top_holder(run_censuses(store_, *ledger), row);
  }
  return ok_status();
}

Status Dispatcher::list_runs(CommandCall& call) {
  const v1::ListRunsRequest& in = call.request.list_runs();
  v1::ListRunsReply& out = *call.reply.mutable_list_runs();
  const ReadScope scope = read_scope(call.caller, peers_read_);
  const std::size_t limit = in.limit() == 0
                                ? protocol::kDefaultListRuns
                                : std::min<std::size_t>(in.limit(), protocol::kMaxListRuns);
  if (store_ == nullptr) {
    for (const RunMachine* r : registry_.runs()) {
      if (scope.covers(r->ledger().info.owner_uid)) {
        to_proto(r->ledger(), *out.add_runs(), kStatusLimits);
      }
    }
    return ok_status();
  }
  // Under `own` other UIDs' runs are filtered out after the query, so a caller may get fewer
  // than `limit` rows; the limit bounds the work, not the answer.
  auto runs = store_->list_runs(limit);
  if (!runs) return Error{runs.error().message, ErrorKind::kUnavailable};
  for (const RunSummary& s : *runs) {
    if (scope.covers(s.info.owner_uid)) to_proto(s, *out.add_runs());
  }
  return ok_status();
}

}  // namespace ramguard::control
