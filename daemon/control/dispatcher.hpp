#pragma once
// Typed request handling: one function per command, from protocol messages to the registry
// and admission and back. Knows nothing about sockets (that is server.hpp).

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "admission/admission.hpp"
#include "admission/desk.hpp"
#include "config/config.hpp"
#include "control/commands.hpp"
#include "control/handler.hpp"
#include "control/queries.hpp"
#include "model/plan.hpp"
#include "runs/run_registry.hpp"

namespace ramguard {
class Store;
class StoreReader;
}  // namespace ramguard

namespace ramguard::control {

// What a reply that carries a record (a run start, a mark, a run end) says about storing it,
// known once its group commit is done; the commands fill everything else at once.
struct ReplyStorage {
  bool stored = false;  // the run's write went to the ledger (or into its open batch)
  std::string warning;  // the command's own hint, beside what the storage adds
};

// One request on its way through its handler (a row of the command table).
struct CommandCall {
  const v1::Request& request;
  const Peer& peer;
  Caller caller;
  v1::Reply& reply;
  StoredReads* read = nullptr;            // what prepare() read from the ledger, if it did
  std::optional<CensusPlacement> placed;  // a mark's census placed by prepare(), if it was
  std::optional<ReplyStorage> storage;    // set by the handlers whose reply carries a record
};

class Dispatcher final : public RequestHandler {
 public:
  // store may be null: the daemon then guards in memory and answers from the registry.
  // The desk decides admissions; `machine` is its view of the node and cgroups, also used for
  // the phase-begin forecast.
  Dispatcher(RunRegistry& registry, Admission& admission, AdmissionDesk& desk,
             MachineState& machine, Store* store, PeersRead peers_read = PeersRead::kOwn);
  ~Dispatcher() override;
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;
  // control.peers_read: whose runs a caller may read (the desk gets its settings from apply()).
  void set_peers_read(PeersRead peers_read) { peers_read_ = peers_read; }
  // What became of a write a reply says is not stored (the ledger journal's note): it goes
  // into the reply's warning.
  void set_unstored_note(std::function<std::string()> note) { unstored_note_ = std::move(note); }

  Answer handle(const v1::Request& request, const Peer& peer) override;
  // Reports and comparisons read the ledger on `reader`'s thread (null: on the loop).
  void set_reader(StoreReader* reader) { reader_ = reader; }
  // An admission lets the desk's history fetch the job's fleet history first; a report or a
  // comparison that needs the ledger has it read off the loop; a mark's census is placed on
  // the registry's placer (the client waits for the reply: its process is still as counted).
  void prepare(const v1::Request& request, std::function<void()> ready) override;
  bool wants_prepare(const v1::Request& request) const override;
  // With group commit on, admissions and releases leave the reservations' ledger write to
  // flush_writes() (the control server's CommitBatch), and the store batches the writes of
  // marks, run starts and ends until then; off, they write at once.
  void set_group_commit(bool on);
  bool writes_pending() const override;
  bool flush_writes() override;

 private:
  // The kinds of CommandSpec::Prepare.
  void prepare_stored_reads(const v1::Request& request, std::function<void()> ready);
  void prepare_admission(const v1::AdmitRequest& in, std::function<void()> ready);
  void prepare_census_placement(const v1::MarkRequest& in, const std::function<void()>& ready);
  // The one place a reply's `stored` and its warning are decided: stored only when the run's
  // write went through and its batch is durable.
  void set_storage(v1::Reply& reply, const ReplyStorage& storage, bool durable) const;
  // The handlers, one per row of the command table (commands.cpp).
  friend std::span<const CommandSpec> command_table();
  Status hello(CommandCall& call);
  Status run_start(CommandCall& call);
  Status mark(CommandCall& call);
  Status run_end(CommandCall& call);
  Status admit(CommandCall& call);
  Status release(CommandCall& call);
  Status status(CommandCall& call);
  Status report(CommandCall& call);
  Status compare(CommandCall& call);
  Status list_runs(CommandCall& call);
  void reservations_changed();
  // `warning` with the unstored note appended (for a reply whose write is not stored).
  std::string with_unstored_note(std::string warning) const;
  // A phase begin's room (node and the run's cgroup), for a run with a plan; else nullopt.
  std::optional<PhaseRoom> phase_room(const std::string& run_id);

  RunRegistry& registry_;
  Admission& admission_;
  AdmissionDesk& desk_;
  MachineState& machine_;
  Store* store_;
  PeersRead peers_read_;
  std::function<std::string()> unstored_note_;
  bool group_commit_ = false;
  bool reservations_dirty_ = false;
  StoreReader* reader_ = nullptr;
  // What prepare() had read for a request, until its handle() (the same request object: the
  // server keeps it alive while it waits).
  std::map<const v1::Request*, std::shared_ptr<StoredReads>> read_ahead_;
  std::map<const v1::MarkRequest*, CensusPlacement> placed_ahead_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the placer's callbacks
};

}  // namespace ramguard::control
