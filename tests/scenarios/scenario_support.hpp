#pragma once
// Support for the verdict scenarios of README.md: a real ramguardd with thresholds scaled
// down in proportion to the memory the scenario uses, a real MemChild driven to absolute RSS
// levels, and the marks of a round (phase begin, peak, floor, phase end, round end) over the
// real protocol.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace ramguard::testing {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

// The daemon's YAML with fast timing (100ms samples, 300ms settle, 3s grace) and the sizes
// that scale with the scenario. `extra` is appended verbatim (more YAML keys).
struct ScaledThresholds {
  std::uint64_t budget_bytes = 0;
  std::uint64_t growth_min_bytes = 0;
  std::uint64_t release_slack_bytes = 0;
  std::string extra;
};
std::string scenario_config(const ScaledThresholds& t);

// A scenario's sizes divided by `scale`, so a story told in tens of GiB fits this VM: gib(16) is
// 16 GiB / scale. thresholds() divides the daemon's defaults with them (growth 512 MB, release
// slack 1 GB), with the budget in the same units.
struct ScenarioScale {
  double scale = 1;
  double unit_bytes = kGiB;
  constexpr std::uint64_t operator()(double units) const {
    return static_cast<std::uint64_t>(units * unit_bytes / scale);
  }
  ScaledThresholds thresholds(double budget_units, std::string extra = {}) const {
    return {.budget_bytes = (*this)(budget_units),
            .growth_min_bytes = static_cast<std::uint64_t>(512e6 / scale),
            .release_slack_bytes = static_cast<std::uint64_t>(1e9 / scale),
            .extra = std::move(extra)};
  }
};

// A daemon started on that configuration, logging at debug level so that settled boundaries
// (event=run.boundary_settled) can be waited for instead of slept for.
std::unique_ptr<Daemon> start_scenario_daemon(const ScaledThresholds& t,
                                              std::filesystem::path state_dir = {});

// Drives a MemChild's anonymous memory to absolute RSS levels: the child's own RSS (code,
// libraries) counts towards every level, so a level is what the daemon will read.
class Shaper {
 public:
  explicit Shaper(MemChild& child);
  std::uint64_t base_bytes() const { return base_; }
  // Holds block `name` at the size that brings RSS to `level_bytes` with every other block.
  void level(std::uint64_t level_bytes);
  // A second block on top of the level (a transient phase peak); free_extra drops it.
  void extra(const std::string& name, std::uint64_t bytes);
  void free_extra(const std::string& name);
  MemChild& child() { return child_; }

 private:
  MemChild& child_;
  std::uint64_t base_ = 0;
  bool have_level_ = false;
};

// A run on the real daemon: start, marks, rounds, status.
class ScenarioRun {
 public:
  struct Start {
    std::string job = "scenario";
    std::uint64_t model_bytes = 0;
    std::uint32_t declared_rounds = 0;
    std::uint32_t hosts = 0;
    std::string reservation_id;
    std::vector<std::pair<std::string, std::string>> labels;
    std::string scope;        // "" (process), "tree" or "cgroup"
    std::string cgroup_path;  // cgroup scope: the cgroup's directory (root only)
  };
  static Start with(std::string job, std::uint64_t model_bytes = 0,
                    std::uint32_t declared_rounds = 0) {
    Start s;
    s.job = std::move(job);
    s.model_bytes = model_bytes;
    s.declared_rounds = declared_rounds;
    return s;
  }
  ScenarioRun(Daemon& daemon, pid_t pid, const Start& start);

  const std::string& id() const { return id_; }
  const v1::RunStartReply& start_reply() const { return start_; }

  // Throws std::runtime_error naming the daemon's error when a mark is refused.
  v1::MarkReply begin(const std::string& phase);
  v1::MarkReply end(const std::string& phase);
  v1::MarkReply round_end();
  v1::RunEndReply finish();

  // One round shaped like the scenarios (README.md): phase `phase` begins, RSS rises to
  // `peak_bytes`, falls to `floor_bytes`, the phase ends, the round ends; then waits until the
  // boundary settled. Returns the phase-end reply (exact phase peak).
  v1::MarkReply round(Shaper& shaper, std::uint64_t peak_bytes, std::uint64_t floor_bytes,
                      const std::string& phase = "aggregation");
  // Waits until the boundary of `round` settled (daemon log), fails the test on timeout.
  void wait_settled(std::uint32_t round);
  std::uint32_t rounds_ended() const { return rounds_; }

  v1::RunStatus status() const;
  v1::RunStatus report() const;

 private:
  v1::MarkReply mark(v1::MarkRequest::Kind kind, const std::string& phase);

  Daemon& daemon_;
  std::string id_;
  v1::RunStartReply start_;
  std::uint32_t rounds_ = 0;
};

// A child memory cgroup of the v1 hierarchy (/sys/fs/cgroup/memory), created for a test and
// removed (rmdir, once its processes are gone) at the end. available() is false, with the
// reason, where there is no v1 memory controller or it cannot be written (not root).
class TestMemoryCgroup {
 public:
  explicit TestMemoryCgroup(const std::string& tag);
  ~TestMemoryCgroup();
  TestMemoryCgroup(const TestMemoryCgroup&) = delete;
  TestMemoryCgroup& operator=(const TestMemoryCgroup&) = delete;
  bool available() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }
  void add(pid_t pid) const;
  void limit(std::uint64_t bytes) const;
  std::uint64_t read(const std::string& file) const;  // a counter file of the cgroup
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::string problem_;
};

// Verdicts of one kind (cleared ones included), in the order they were raised.
std::vector<v1::Verdict> verdicts_of(const v1::RunStatus& run, const std::string& kind);
// Every verdict as "kind[round] summary" lines, for failure messages.
std::string verdict_text(const v1::RunStatus& run);
// Every settled floor of the run as "r1=..MiB r2=..", for failure messages.
std::string floors_text(const v1::RunStatus& run);
double figure(const v1::Verdict& verdict, const std::string& name);  // NaN when absent
// The memory that counts of a reading (anon + shmem + swap): what peaks and verdicts judge.
std::uint64_t counted(const v1::Reading& reading);

// Polls status until a verdict of `kind` is there (or the timeout passes); returns the status.
v1::RunStatus wait_for_verdict(const ScenarioRun& run, const std::string& kind,
                               std::chrono::milliseconds timeout = 10s);

}  // namespace ramguard::testing
