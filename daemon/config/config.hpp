#pragma once
// Everything ramguardd is configured with. The member initialisers ARE the embedded defaults
// (the numbers of daemon/README.md, "The problem"): `ramguardd` with no file runs on exactly
// this. load.hpp fills it from YAML, command_line.hpp layers flags over it.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "model/access.hpp"
#include "model/endpoint.hpp"
#include "model/plan.hpp"
#include "model/scope.hpp"
#include "ramguard/base/protocol.hpp"

namespace ramguard {

using namespace std::chrono_literals;

// What a non-root member of the socket's group may read of other UIDs' work: kAll (status,
// reports, run lists and admission baselines of anyone's runs; the default, for one team
// sharing a machine) or kOwn (only runs and reservations its UID owns; budget totals stay
// visible, since every admission decision states them).

struct SamplingConfig {
  std::chrono::nanoseconds interval = 2s;  // periodic statm read
  // Samples younger than this are kept at full resolution; older ones are downsampled into
  // buckets (min/max/last), at most max_buckets per run: the daemon's memory per run is bounded.
  std::chrono::nanoseconds full_resolution_window = 10min;
  std::chrono::nanoseconds bucket = 1min;
  std::uint32_t max_buckets = 1440;  // a day of one-minute buckets; older pairs merge
  // How often a run's exact peak (VmHWM, a status read) is refreshed between marks; every
  // other periodic read is statm alone. Marks and run end always read it, so a peak is never
  // lost, only reported up to this late. At least every sample.
  std::chrono::nanoseconds peak_refresh = 10s;
  // The same for a watched PID (no run, no marks): its exact peak is exported only as a gauge,
  // so a slower refresh costs nothing but latency, and at a thousand targets the status reads
  // would otherwise cost more than all the statm reads together.
  std::chrono::nanoseconds watch_peak_refresh = 60s;
  // A reading on the event loop longer than this counts as slow (per target, in /metrics;
  // its first logged). Every other target's sample and every reply waits behind it. A statm
  // read takes ~3 us and a 32-worker tree's ~60 us (~0.9 ms re-walked without fork events),
  // so 10 ms is 100 times a big tree's reading and above the few ms a reading preempted once
  // on a busy node takes: that one is not flagged. 0 counts every reading.
  std::chrono::nanoseconds slow_read = 10ms;
  friend bool operator==(const SamplingConfig&, const SamplingConfig&) = default;
};

// What /metrics shows of job names, which may say what a team trains: the name, a stable hash
// of it ("h-" + 12 hex digits, the same on every node and restart), or nothing.
enum class JobNames { kPlain, kHash, kOmit };

struct MetricsConfig {
  Endpoint listen{"127.0.0.1", 9797};
  std::chrono::nanoseconds run_retention = 15min;  // a finished run's series then go away
  // Runs, admissions and watched PIDs with their own series; past it new targets share the
  // "other" series, counted by ramguard_metrics_targets_folded and logged.
  std::uint32_t max_targets = 1024;
  // Of those, how many one UID other than root may hold live (its runs and its admissions'
  // jobs); past it its new ones fold into "other", so one user's throwaway admissions cannot
  // fold another's run. 0: no per-user cap.
  std::uint32_t max_targets_per_user = 256;
  // Hashed by default: /metrics on loopback is open to every local user, and a job name may say
  // what a team trains. The hash is stable, so dashboards still group by job; `plain` is the
  // operator's choice (docs/security.md).
  JobNames job_names = JobNames::kHash;
  friend bool operator==(const MetricsConfig&, const MetricsConfig&) = default;
};

struct TcpConfig {
  bool enabled = false;
  Endpoint listen{"127.0.0.1", 9798};
  std::string token_file;  // required when enabled
  friend bool operator==(const TcpConfig&, const TcpConfig&) = default;
};

struct ControlConfig {
  // Empty: resolved at startup by the rule clients share (ramguard/base/socket_path.hpp):
  // $RAMGUARD_SOCKET, else /run/ramguard/ramguard.sock as root, else
  // $XDG_RUNTIME_DIR/ramguard.sock, else /tmp/ramguard-UID.sock.
  std::string socket;
  std::uint32_t socket_mode = 0660;
  // The socket file's group (a name or a numeric GID); empty: the daemon's own group. With mode
  // 0660, the members of this group (a non-root coordinator's) may connect.
  std::string socket_group;
  PeersRead peers_read = PeersRead::kOwn;  // private by default: others' runs are opt-in
  std::uint64_t max_frame_bytes = protocol::kMaxRequestBytes;
  std::uint32_t max_connections = 64;
  std::uint32_t max_runs = 256;
  std::uint32_t max_marks_per_run = 100000;
  std::uint32_t max_requests_per_second = 1000;  // per connection
  // Replies a client has not read that the daemon holds for it; above this its next request
  // waits until it reads, and after unread_output_timeout without reading it is disconnected.
  std::uint64_t max_unread_output_bytes = 1024 * 1024;
  std::chrono::nanoseconds unread_output_timeout = 30s;
  std::chrono::nanoseconds idle_timeout = 10min;        // no request, no reply read: disconnected
  std::uint32_t max_connections_per_uid = 16;           // per unprivileged UID
  std::uint32_t reserved_connections = 8;               // of max_connections, for root and own UID
  std::chrono::nanoseconds socket_check_interval = 2s;  // socket file removed or replaced?
  TcpConfig tcp;
  friend bool operator==(const ControlConfig&, const ControlConfig&) = default;
};

// Embedded thresholds in model copies, for runs that declare their model size: 0.2 copies is
// the 512 MB byte default for a 2.5 GB model; a run keeping half a copy per round warns at its
// first judged round; the release slack (0.4 copies, 1 GB at 2.5 GB) tells a run that returns
// to its baseline from one still holding a copy. Runaway: 0.8 copies/s sustained for the
// runaway window (8 copies in 10 s) within one round.
inline constexpr double kDefaultGrowthModelCopies = 0.2;
inline constexpr double kDefaultRunawayModelCopiesPerSecond = 0.8;
inline constexpr double kDefaultReleaseSlackModelCopies = 0.4;

struct GrowthConfig {
  std::uint64_t min_bytes = 512'000'000;  // one round's growth that warns at once
  std::uint32_t warmup_rounds = 1;        // first rounds not judged
  std::uint32_t fit_rounds = 5;           // recent rounds in the slope fit
  double min_fit_r2 = 0.8;                // fit quality that makes a slope a leak
  std::chrono::nanoseconds settle = 3s;   // floor = lowest reading this long after round end
  std::uint64_t runaway_bytes_per_second = 200'000'000;  // within-round slope that flags runaway
  std::chrono::nanoseconds runaway_min_duration = 10s;   // ... sustained at least this long
  // The same thresholds in model copies, applied through each run's model_bytes; a run without
  // a model size uses the bytes. The embedded copies are the defaults for a run that declares
  // its model: the bytes above fit a 2.5 GB model only (a 0.2 GB model leaking half a copy per
  // round would never warn). Where the file gives a threshold in bytes, the reader keeps the
  // bytes and sets its copies to 0 (0: not given).
  double min_model_copies = kDefaultGrowthModelCopies;
  double runaway_model_copies_per_second = kDefaultRunawayModelCopiesPerSecond;
  friend bool operator==(const GrowthConfig&, const GrowthConfig&) = default;
};

struct ReleaseConfig {
  std::uint64_t slack_bytes = 1'000'000'000;  // pass: RSS <= baseline + slack ...
  std::chrono::nanoseconds grace = 30s;       // ... within this long after run end
  double slack_model_copies = kDefaultReleaseSlackModelCopies;  // in model copies (0: not given)
  friend bool operator==(const ReleaseConfig&, const ReleaseConfig&) = default;
};

struct HeadroomConfig {
  double warn_fraction = 0.9;  // warn when a peak passes this fraction of the budget
  friend bool operator==(const HeadroomConfig&, const HeadroomConfig&) = default;
};

// The fleet's history (fleet/): a Prometheus-compatible query endpoint that scrapes every
// node's ramguard_job_peak_bytes. Empty URL: this node's ledger only.
struct FleetHistoryConfig {
  std::string prometheus_url;  // http://HOST:PORT[/PREFIX]; https is refused
  std::chrono::nanoseconds lookback = std::chrono::hours(24 * 30);    // max_over_time window
  std::chrono::nanoseconds timeout = std::chrono::milliseconds(500);  // one query, all of it
  std::chrono::nanoseconds cache_ttl = std::chrono::minutes(5);       // answers and failures alike
  std::string token_file;  // a bearer token for the endpoint; "" none
  friend bool operator==(const FleetHistoryConfig&, const FleetHistoryConfig&) = default;
};

struct AdmissionConfig {
  std::chrono::nanoseconds lease = 60s;  // a reservation no run claims expires after this
  bool use_calibrated = false;           // prefer measured peak x factor over declared estimates
  double calibration_factor = 1.1;       // in [1, 10]
  // Fairness, per UID other than root (0: no cap): what its reservations may add up to, and
  // how many active runs it may have. On by default (docs/security.md, "Fair shares"):
  // without them one member of the socket's group could reserve the whole budget and fill the
  // run slots, and root would be refused. The reservation cap is a share of the budget unless
  // the file gives bytes (`max_reserved_per_user: 75%` or `: 12GB`): 75% admits one ViT-H/14
  // coordinator's 10.2 GB Load on the 16 GB default and keeps 4 GB for root and the others.
  // 32 active runs are 32 coordinators of one user on one node, an eighth of max_runs.
  std::uint64_t max_reserved_per_user_bytes = 0;  // when not 0, wins over the fraction
  double max_reserved_per_user_fraction = 0.75;   // of budget_bytes
  std::uint32_t max_active_runs_per_user = 32;
  // Whose finished runs calibrate anyone's admission, beside the owner's own (root by default).
  std::vector<std::uint32_t> trusted_uids{0};
  FleetHistoryConfig history;
  friend bool operator==(const AdmissionConfig&, const AdmissionConfig&) = default;
};

// How much of the ledger is kept: finished runs past any of these are deleted, oldest first,
// at startup and hourly (active runs never). 0: no limit of that kind.
struct RetentionConfig {
  std::uint32_t max_age_days = 90;       // finished runs that ended longer ago go
  std::uint32_t max_runs = 10'000;       // runs kept (active ones count, and stay)
  std::uint64_t max_bytes = 1ull << 30;  // pages in use in the ledger file (1 GiB)
  friend bool operator==(const RetentionConfig&, const RetentionConfig&) = default;
};

struct StoreConfig {
  RetentionConfig retention;
  // Writes accepted while the ledger cannot take them (full disk), kept in memory until it
  // can; past this the oldest are dropped (about 1 KB each: 16,384 is ~16 MB at most,
  // counted in the daemon's worst case in docs/measuring.md).
  std::uint32_t journal_max_writes = 16'384;
  // Each commit's write-ahead log in one write (store/wal_write_vfs.hpp); false: SQLite's own
  // VFS, a write per frame header and page. Read when the ledger is opened (at start).
  bool coalesce_wal_writes = true;
  friend bool operator==(const StoreConfig&, const StoreConfig&) = default;
};

// One end of a phase gap: "aggregation.end" is {phase "aggregation", edge kEnd}.
struct PhaseEdge {
  enum class Edge { kBegin, kEnd };
  std::string phase;
  Edge edge = Edge::kEnd;
  std::string to_string() const;  // "aggregation.end"
  friend bool operator==(const PhaseEdge&, const PhaseEdge&) = default;
};

// A target interval between two marks, checked per round.
struct PhaseGapConfig {
  PhaseEdge from;
  PhaseEdge to;
  std::chrono::nanoseconds max{0};
  std::string name() const;  // "aggregation.end -> synchronization.begin"
  friend bool operator==(const PhaseGapConfig&, const PhaseGapConfig&) = default;
};

// The fedavg plan: the largest live sum is aggregation, (hosts + 2) copies + 0.16 GB (fitted to
// a real PyTorch coordinator; synchronization holds 3 copies, so it dominates with one host).
MemoryPlan default_fedavg_plan();
// admission.max_reserved_per_user in bytes for this budget (0: no cap).
std::uint64_t user_reserve_cap_bytes(const AdmissionConfig& admission, std::uint64_t budget_bytes);
// The default target: aggregation end to synchronization begin within 10 s.
PhaseGapConfig default_phase_gap();

struct Config {
  std::uint64_t budget_bytes = 16'000'000'000;
  std::uint64_t margin_bytes = 0;  // admission: estimates must fit budget - margin
  // `budget: auto`: budget_bytes is MemTotal less system_reserve_bytes, resolved at start and
  // at every reload (config/auto_budget.hpp); a Load's own cgroup limit caps each admission.
  bool budget_auto = false;
  std::uint64_t system_reserve_bytes = 1'000'000'000;
  std::uint64_t auto_total_bytes = 0;  // the MemTotal an auto budget was resolved from
  // Empty: resolved at startup (paths.hpp): /var/lib/ramguard as root, else
  // $XDG_STATE_HOME/ramguard, else ~/.local/state/ramguard.
  std::string state_dir;
  SamplingConfig sampling;
  MetricsConfig metrics;
  ControlConfig control;
  GrowthConfig growth;
  ReleaseConfig release;
  HeadroomConfig headroom;
  AdmissionConfig admission;
  StoreConfig store;
  std::vector<PhaseGapConfig> phase_gaps{default_phase_gap()};
  std::map<std::string, MemoryPlan> plans{{"fedavg", default_fedavg_plan()}};  // by name
  std::vector<pid_t> watch;             // PIDs watched from startup
  std::map<pid_t, Scope> watch_scopes;  // those not of the process scope
  log::Level log_level = log::Level::kInfo;
  friend bool operator==(const Config&, const Config&) = default;
};

}  // namespace ramguard
