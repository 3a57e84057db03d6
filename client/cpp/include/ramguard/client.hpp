#pragma once
// libramguard: the C++ client of ramguardd's control socket.
//
// clang-format off
//   ramguard::Client client;  // RAMGUARD_SOCKET or the default path
//   auto admitted = client.admit({.job = "vit", .estimate_bytes = 11'100'000'000});
//   if (!admitted.admitted()) return;  // do not claim GPU hosts
//   ramguard::Run run =
//       client.start_run({.job = "vit", .reservation_id = admitted.reservation_id()});
//   {
//     auto guard = run.phase("aggregation");  // begins now, ends at scope exit
//     aggregate();
//   }
//   run.round_end();
//   run.end();
// clang-format on
//
// Wire: ramguard.v1.Request/Reply over a Unix socket, one reply per request, request ids
// echoed. Each connection starts with a hello (JSON lines) offering protobuf's length-delimited
// binary framing, used when the daemon accepts it; force_json_lines keeps one JSON object per
// line (protobuf JSON mapping) throughout. Every call throws ClientError on
// failure (transport, timeout, garbled reply, or the daemon's error reply with its code); a
// refused admission is not an error (AdmitReply::admitted() is false). A Client is safe to share
// between threads (calls are serialized); Run and PhaseGuard refer to their Client, which must
// outlive them and stay where it is (do not move a Client that has Runs).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ramguard.pb.h"
#include "ramguard/base/protocol.hpp"
#include "ramguard/error.hpp"
#include "ramguard/socket_path.hpp"

namespace ramguard {

// The values the daemon uses too (ramguard/base/protocol.hpp).
inline constexpr std::uint32_t kProtocolVersion = protocol::kVersion;
inline constexpr std::size_t kMaxRequestBytes = protocol::kMaxRequestBytes;
// Replies carrying a report with samples can exceed the daemon's 64 KiB request cap.
inline constexpr std::size_t kDefaultMaxReplyBytes = protocol::kMaxReplyBytes;
inline constexpr std::chrono::milliseconds kDefaultTimeout{5000};
// How long a mark waits for the daemon by default: a few times a loaded machine's slowest mark,
// far below a training step. The daemon drops a mark it reads after that (DEADLINE_EXCEEDED).
inline constexpr std::chrono::milliseconds kDefaultMarkTimeout{50};

// Option structs give every member a default so designated initializers that name only some
// members compile cleanly under -Wextra (-Wmissing-field-initializers).
struct ClientOptions {
  std::string socket_path{};                            // empty: default_socket_path()
  std::chrono::milliseconds timeout = kDefaultTimeout;  // per call: connect, send and reply
  // Per mark instead (phase begin and end, round end): a stopped or slow daemon costs the
  // training loop at most this, then the mark throws ClientError(kTimeout).
  std::chrono::milliseconds mark_timeout = kDefaultMarkTimeout;
  std::size_t max_reply_bytes = kDefaultMaxReplyBytes;
  std::string client_name = "ramguard-cpp/0.1.0";  // sent in hello
  // JSON lines only: no hello offering the binary framing (debugging with strace or socat, a
  // proxy that expects lines). The replies are the same either way.
  bool force_json_lines = false;
  // Called once with each verdict of a Run made by this client, in the calling thread: those
  // of each mark's and the end's reply and, while Run::end() waits up to release_wait for the
  // release verdict (asking `report`), those no reply carried. Unset: no wait, replies only.
  // What the callback throws propagates out of the call that delivered the verdict.
  std::function<void(const v1::Verdict&)> on_verdict{};
  std::chrono::milliseconds release_wait{5000};
  // Guarded, as the Python client is by default (docs/clients.md, "The client contract"): a
  // Run's marks, round ends and end never throw for the daemon's sake (unreachable, stopped,
  // slow, restarted or refusing). The problem goes to on_warning once per outage; marks are
  // dropped while the client retries with a backoff (0.5 s doubling to 30 s); when the daemon
  // answers again, the run's open phases are resynchronised from its status (a phase left
  // meanwhile is ended at the time it was left, one entered is begun at the time it was
  // entered). The constructor, admit, start_run and the queries still throw. Strict (false)
  // is the default for C++: every failure throws ClientError.
  bool guarded = false;
  // Guarded mode's warnings and notes, one line each; unset: written to stderr.
  std::function<void(const std::string&)> on_warning{};
};

struct AdmitOptions {
  std::string job{};
  std::uint64_t estimate_bytes = 0;  // either this ...
  std::uint64_t model_bytes = 0;     // ... or a model (bytes, or parameters x bytes each) ...
  std::uint64_t parameter_count = 0;
  double bytes_per_parameter = 0;
  std::string plan{};  // ... and a plan named in the daemon's configuration
  std::uint32_t hosts = 0;
  std::uint32_t pid = 0;  // whose RSS is the baseline; 0: the caller
  bool use_calibrated = false;
  std::string scope{};  // the coming run's scope: its baseline is the tree's or the cgroup's
};

struct RunOptions {
  std::uint32_t pid = 0;  // 0: the caller's own PID
  std::string job{};
  std::map<std::string, std::string> labels{};
  std::uint64_t model_bytes = 0;
  std::uint32_t declared_rounds = 0;
  std::uint32_t hosts = 0;
  std::string reservation_id{};  // an admitted reservation this run claims
  // "process" (default), "tree" (the PID and its descendants) or "cgroup" (the PID's memory
  // cgroup, or cgroup_path: root only).
  std::string scope{};
  std::string cgroup_path{};
};

// Optional facts attached to a mark (allocator statistics, a garbage-collector probe).
struct MarkFacts {
  std::optional<v1::AllocatorStats> allocator{};
  std::optional<v1::GcProbe> gc{};
};

// Facts of the coordinator at its run's end, for the release verdict's split of what stays
// resident (ramguard/allocator_probe.hpp measures the allocator's part).
struct RunEndFacts {
  std::string failure{};  // set when the run failed: it gets a critical "failed" verdict
  std::optional<v1::AllocatorStats> allocator{};
  std::optional<v1::GcProbe> gc{};
  std::optional<v1::TrimProbe> trim{};
  // ramguard exec: the process's ru_maxrss (bytes) from wait4, for its run's exact peak.
  std::uint64_t exit_max_rss_bytes = 0;
  // How long end() waits for the release verdict (default: ClientOptions::release_wait when
  // on_verdict is set, else no wait). The verdicts fetched are appended to the end reply.
  std::optional<std::chrono::milliseconds> release_wait{};
};

class Run;

class Client {
 public:
  // Connects at once; throws ClientError naming the path when nobody answers.
  explicit Client(ClientOptions options = {});
  explicit Client(std::string socket_path, std::chrono::milliseconds timeout = kDefaultTimeout);
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  const std::string& socket_path() const;
  const ClientOptions& options() const;

  // Sends any request (version and request id are filled in) and returns its reply. Throws
  // ClientError when the reply carries an error. Reconnects once a broken or timed-out
  // connection is used again.
  v1::Reply call(v1::Request request);
  // The same within `timeout` instead of ClientOptions::timeout.
  v1::Reply call(v1::Request request, std::chrono::milliseconds timeout);

  v1::HelloReply hello();
  v1::AdmitReply admit(const AdmitOptions& options);
  v1::ReleaseReply release(const std::string& reservation_id);
  // Inside a launcher's run (RAMGUARD_RUN_ATTACH and RAMGUARD_RUN set, e.g. a Slurm step under
  // spank_ramguard.so) and for this process: that run, attached, and no second run is started.
  Run start_run(const RunOptions& options);
  v1::StatusReply status(const std::string& run_id = {});
  v1::ReportReply report(const std::string& run_id, bool include_samples = false);
  v1::CompareReply compare(const std::vector<std::string>& run_ids,
                           const std::map<std::string, std::string>& labels = {});
  v1::ListRunsReply list_runs(std::uint32_t limit = 0);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Marks a phase's begin on construction and its end on destruction (also while an exception
// unwinds). The destructor never throws: a failed end mark is dropped silently; call end() to
// see it. Movable, not copyable.
class PhaseGuard {
 public:
  PhaseGuard(Run& run, std::string phase);  // throws ClientError if the begin mark fails
  ~PhaseGuard();
  PhaseGuard(PhaseGuard&& other) noexcept;
  PhaseGuard& operator=(PhaseGuard&&) = delete;
  PhaseGuard(const PhaseGuard&) = delete;
  PhaseGuard& operator=(const PhaseGuard&) = delete;

  // Ends the phase now and returns the mark's reply (exact phase peak, duration); throws.
  v1::MarkReply end(const MarkFacts& facts = {});
  const std::string& phase() const { return phase_; }
  const v1::MarkReply& begin_reply() const { return begin_reply_; }

 private:
  Run* run_;
  std::string phase_;
  v1::MarkReply begin_reply_;
};

// A run on the daemon. Not ended automatically: call end() (the daemon ends a run by itself when
// its process exits). Movable; refers to its Client.
class Run {
 public:
  Run(Client& client, std::string run_id, v1::RunStartReply start = {});

  // Joins a run started elsewhere (e.g. by `ramguard exec`): run_id, or env RAMGUARD_RUN when
  // empty. Throws ClientError(kUsage) when neither names a run.
  static Run attach(Client& client, std::string run_id = {});

  const std::string& id() const { return run_id_; }
  const v1::RunStartReply& start_reply() const { return start_; }

  v1::MarkReply mark(v1::MarkRequest::Kind kind, const std::string& phase, std::uint32_t round = 0,
                     const MarkFacts& facts = {});
  v1::MarkReply phase_begin(const std::string& phase) {
    return mark(v1::MarkRequest::PHASE_BEGIN, phase);
  }
  v1::MarkReply phase_end(const std::string& phase, const MarkFacts& facts = {}) {
    return mark(v1::MarkRequest::PHASE_END, phase, 0, facts);
  }
  // round 0: the daemon counts rounds.
  v1::MarkReply round_end(std::uint32_t round = 0, const MarkFacts& facts = {}) {
    return mark(v1::MarkRequest::ROUND_END, {}, round, facts);
  }
  v1::RunEndReply end(const RunEndFacts& facts = {});

  // RAII phase: auto g = run.phase("aggregation");
  [[nodiscard]] PhaseGuard phase(std::string name) { return PhaseGuard(*this, std::move(name)); }

  // Guarded mode: whether marks reach the daemon now (false while it is away or after it
  // reported the run ended), and how many were dropped. A dropped mark returns an empty reply.
  bool in_step() const { return !needs_sync_ && !gone_; }
  std::uint64_t dropped_marks() const { return dropped_marks_; }

 private:
  v1::MarkReply send_mark(v1::Request request, std::chrono::milliseconds timeout);
  v1::RunEndReply end_strict(const RunEndFacts& facts);
  v1::MarkReply guarded_mark(v1::Request request, std::chrono::milliseconds timeout);
  // What this process believes of its phases, kept in guarded mode to resynchronise.
  void note_mark(const v1::MarkRequest& mark);
  // In step with the daemon, resynchronising first when it was away; false while backing off.
  bool ready();
  void resync();
  void lost(const ClientError& error);
  void warn(const std::string& line) const;

  // Hands the verdicts not delivered before to on_verdict; returns them.
  std::vector<v1::Verdict> deliver(const google::protobuf::RepeatedPtrField<v1::Verdict>& verdicts);
  void await_release(v1::RunEndReply& reply, std::chrono::milliseconds wait);

  Client* client_;
  std::string run_id_;
  v1::RunStartReply start_;
  std::set<std::string> delivered_;  // kind, round, time, cleared and summary of each
  bool mark_times_ = true;  // false once a daemon from before MarkRequest fields 7-8 says so
  // Guarded mode.
  std::set<std::string> open_;                       // phases this process is in
  std::map<std::string, std::int64_t> began_at_us_;  // when it last entered each
  std::map<std::string, std::int64_t> left_at_us_;   // when it last left each
  // When it first left each while ramguardd could not hear it: the daemon's phase of that name
  // ended then, even if this process is in the phase again by the resynchronisation.
  std::map<std::string, std::int64_t> left_unheard_us_;
  bool needs_sync_ = false;  // the daemon missed marks
  bool gone_ = false;        // the daemon ended the run
  std::uint64_t dropped_marks_ = 0;
  std::chrono::steady_clock::time_point next_try_{};
  std::chrono::milliseconds backoff_{protocol::kRetryFirstMilliseconds};
};

}  // namespace ramguard
