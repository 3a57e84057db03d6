// The `cgroup` run scope against a real v1 memory cgroup, created and removed by the test: a
// run on one process measures every process of its cgroup, and a spike in ANOTHER process of
// the cgroup between samples shows at full size in the phase's exact peak (the cgroup's
// max_usage_in_bytes, reset at every mark). Bad scopes and paths get errors naming them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
const std::filesystem::path kV1Memory = "/sys/fs/cgroup/memory";

// A child memory cgroup of the v1 hierarchy, removed (after its processes) at the end.
class TestCgroup {
 public:
  TestCgroup() : dir_(kV1Memory / ("ramguard-test-" + std::to_string(::getpid()))) {
    std::filesystem::create_directory(dir_);
  }
  ~TestCgroup() {
    std::error_code ec;
    std::filesystem::remove(dir_, ec);  // rmdir: only once every process has left
  }
  void add(pid_t pid) const { std::ofstream(dir_ / "cgroup.procs") << pid << "\n"; }
  void limit(std::uint64_t bytes) const {
    std::ofstream(dir_ / "memory.limit_in_bytes") << bytes << "\n";
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

v1::Reply start(const Daemon& d, pid_t pid, const std::string& scope,
                const std::string& cgroup_path = "") {
  v1::Request request;
  auto& s = *request.mutable_run_start();
  s.set_pid(static_cast<std::uint32_t>(pid));
  s.set_job("cgroup-scope");
  s.set_scope(scope);
  s.set_cgroup_path(cgroup_path);
  return d.call(request);
}

v1::Reply mark(const Daemon& d, const std::string& run, v1::MarkRequest::Kind kind,
               const std::string& phase) {
  v1::Request request;
  auto& m = *request.mutable_mark();
  m.set_run_id(run);
  m.set_kind(kind);
  m.set_phase(phase);
  return d.call(request);
}

v1::RunStatus status(const Daemon& d, const std::string& run) {
  v1::Request request;
  request.mutable_status()->set_run_id(run);
  const v1::Reply reply = d.call(request);
  return reply.status().runs_size() == 1 ? reply.status().runs(0) : v1::RunStatus{};
}

TEST(CgroupScope, ARunMeasuresEveryProcessOfTheCgroupWithTheCgroupsExactPeak) {
  if (!std::filesystem::exists(kV1Memory / "memory.max_usage_in_bytes")) {
    GTEST_SKIP() << "this kernel has no v1 memory controller at " << kV1Memory;
  }
  TestCgroup cgroup;
  auto d = Daemon::with_args({"--interval", "100ms"});
  {
    MemChild coordinator;  // the run's process: allocates nothing itself
    MemChild worker;       // another process of the same cgroup
    cgroup.add(coordinator.pid());
    cgroup.add(worker.pid());

    const v1::Reply started = start(*d, coordinator.pid(), "cgroup");
    ASSERT_FALSE(started.has_error()) << started.error().message();
    const std::string run = started.run_start().run_id();
    EXPECT_TRUE(started.run_start().exact_peaks()) << "max_usage_in_bytes is resettable";
    const v1::RunStatus first = status(*d, run);
    EXPECT_EQ(first.scope(), "cgroup");
    EXPECT_EQ(first.cgroup_dir(), cgroup.dir().string());
    const std::string scrape = d->scrape_metrics();
    EXPECT_NE(scrape.find("ramguard_target_scope_info{"), std::string::npos) << scrape;
    EXPECT_NE(scrape.find("scope=\"cgroup\""), std::string::npos) << scrape;

    // A spike in the worker between samples: allocated, touched and freed inside the phase.
    ASSERT_FALSE(mark(*d, run, v1::MarkRequest::PHASE_BEGIN, "aggregation").has_error());
    worker.command("alloc spike " + std::to_string(256 * kMiB));
    worker.command("free spike");
    const v1::Reply ended = mark(*d, run, v1::MarkRequest::PHASE_END, "aggregation");
    ASSERT_FALSE(ended.has_error()) << ended.error().message();
    EXPECT_GE(ended.mark().phase_peak_bytes(), first.baseline().rss_bytes() + 250 * kMiB)
        << "the cgroup's peak holds the worker's spike";
    EXPECT_TRUE(ended.mark().peak_exact());

    // Memory the worker keeps shows in the run's periodic readings, and in the baseline an
    // admission for a cgroup-scope run takes.
    worker.command("alloc kept " + std::to_string(128 * kMiB));
    v1::Request admit;
    admit.mutable_admit()->set_job("cgroup-scope");
    admit.mutable_admit()->set_estimate_bytes(1);
    admit.mutable_admit()->set_pid(static_cast<std::uint32_t>(coordinator.pid()));
    admit.mutable_admit()->set_scope("cgroup");
    const v1::Reply admitted = d->call(admit);
    ASSERT_FALSE(admitted.has_error()) << admitted.error().message();
    EXPECT_GE(admitted.admit().baseline_bytes(), first.baseline().rss_bytes() + 120 * kMiB);
    EXPECT_TRUE(eventually(
        [&] {
          return status(*d, run).last().rss_bytes() >= first.baseline().rss_bytes() + 120 * kMiB;
        },
        5s, 50ms))
        << "last " << status(*d, run).last().rss_bytes() << " baseline "
        << first.baseline().rss_bytes();
    EXPECT_GE(status(*d, run).last().anon_bytes(), 120 * kMiB);

    v1::Request end;
    end.mutable_run_end()->set_run_id(run);
    EXPECT_FALSE(d->call(end).has_error());
    // The report says what was measured.
    const auto report =
        run_command({cli_path(), "--socket", d->socket_path().string(), "report", run});
    EXPECT_NE(report.output.find("Scope:          cgroup " + cgroup.dir().string()),
              std::string::npos)
        << report.output;
    coordinator.command("exit 0");
    worker.command("exit 0");
    coordinator.wait();
    worker.wait();
  }
  EXPECT_NE(d->log_text().find("scope=cgroup"), std::string::npos) << d->log_text();
}

// A worker of the cgroup killed by the kernel's OOM killer (the cgroup's limit, no swap here):
// the run, on another process of the cgroup, gets a critical oom_kill verdict.
TEST(CgroupScope, AnOomKillInTheCgroupIsAVerdict) {
  if (!std::filesystem::exists(kV1Memory / "memory.max_usage_in_bytes")) {
    GTEST_SKIP() << "this kernel has no v1 memory controller at " << kV1Memory;
  }
  TestCgroup cgroup;
  cgroup.limit(96 * kMiB);
  auto d = Daemon::with_args({"--interval", "100ms"});
  {
    MemChild coordinator;
    MemChild worker;
    cgroup.add(coordinator.pid());
    cgroup.add(worker.pid());
    const v1::Reply started = start(*d, coordinator.pid(), "cgroup");
    ASSERT_FALSE(started.has_error()) << started.error().message();
    const std::string run = started.run_start().run_id();
    EXPECT_THROW(worker.command("alloc big " + std::to_string(256 * kMiB)), std::runtime_error)
        << "the worker outlived a 256 MiB allocation in a 96 MiB cgroup";
    EXPECT_EQ(worker.wait() & 0x7f, SIGKILL);
    {
      std::ifstream in(cgroup.dir() / "memory.oom_control");
      std::stringstream text;
      text << in.rdbuf();
      ASSERT_NE(text.str().find("oom_kill 1"), std::string::npos) << text.str();
    }
    const v1::Verdict* oom = nullptr;
    v1::RunStatus s;
    EXPECT_TRUE(eventually(
        [&] {
          s = status(*d, run);
          for (const auto& v : s.verdicts()) {
            if (v.kind() == "oom_kill") oom = &v;
          }
          return oom != nullptr;
        },
        5s, 50ms))
        << s.DebugString() << d->log_text();
    if (oom != nullptr) {
      EXPECT_EQ(oom->severity(), v1::CRITICAL);
      EXPECT_NE(oom->summary().find("killed 1 process in cgroup " + cgroup.dir().string()),
                std::string::npos)
          << oom->summary();
    }
    EXPECT_EQ(s.state(), "active") << "the run's own process lives on";
    coordinator.command("exit 0");
    coordinator.wait();
  }
}

// Processes that keep every CPU busy while a test runs: a loaded machine, where the daemon's
// loop gets the CPU late.
class CpuBurners {
 public:
  explicit CpuBurners(int count) {
    for (int i = 0; i < count; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        for (;;) ::getppid();  // a system call per turn: never optimised away
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~CpuBurners() {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }

 private:
  std::vector<pid_t> pids_;
};

// The run's own process OOM-killed, its cgroup removed 0.1 s later, on a machine loaded by CPU
// burners (and whatever else runs): the death is still an OOM kill, with the cgroup's peak,
// because the exit watcher reads the cgroup the moment it sees the exit.
TEST(CgroupScope, AnOomDeathSurvivesTheCgroupsRemovalRightAfterTheKill) {
  if (!std::filesystem::exists(kV1Memory / "memory.max_usage_in_bytes")) {
    GTEST_SKIP() << "this kernel has no v1 memory controller at " << kV1Memory;
  }
  auto d = Daemon::with_args({"--interval", "100ms"});
  const CpuBurners burners(static_cast<int>(std::thread::hardware_concurrency()) + 1);
  std::string run;
  {
    TestCgroup cgroup;
    cgroup.limit(96 * kMiB);
    MemChild coordinator;
    cgroup.add(coordinator.pid());
    const v1::Reply started = start(*d, coordinator.pid(), "cgroup");
    ASSERT_FALSE(started.has_error()) << started.error().message();
    run = started.run_start().run_id();
    ASSERT_FALSE(mark(*d, run, v1::MarkRequest::PHASE_BEGIN, "aggregation").has_error());
    EXPECT_THROW(coordinator.command("alloc big " + std::to_string(256 * kMiB)),
                 std::runtime_error);
    EXPECT_EQ(coordinator.wait() & 0x7f, SIGKILL);
    std::this_thread::sleep_for(100ms);
    ASSERT_EQ(::rmdir(cgroup.dir().c_str()), 0) << "the cgroup is removed 0.1 s after the kill";
  }
  v1::RunStatus s;
  const v1::Verdict* exited = nullptr;
  ASSERT_TRUE(eventually(
      [&] {
        s = status(*d, run);
        for (const auto& v : s.verdicts()) {
          if (v.kind() == "exited") exited = &v;
        }
        return exited != nullptr;
      },
      10s, 50ms))
      << s.DebugString() << d->log_text();
  EXPECT_EQ(s.state(), "exited");
  EXPECT_NE(exited->summary().find("was killed by the kernel's OOM killer"), std::string::npos)
      << exited->summary() << "\n"
      << d->log_text();
  EXPECT_EQ(exited->figures().count("oom_killed"), 1U) << exited->summary();
  ASSERT_EQ(exited->figures().count("cgroup_peak_usage_bytes"), 1U) << exited->summary();
  EXPECT_GE(exited->figures().at("cgroup_peak_usage_bytes"), 0.95 * 96 * kMiB)
      << "the cgroup reached its limit before the kill";
  EXPECT_GE(s.peak_bytes(), 0.95 * 96 * kMiB) << "the death's peak is the run's";
}

TEST(CgroupScope, BadScopesAndCgroupPathsAreRefusedNamingThem) {
  auto d = Daemon::with_args({"--interval", "100ms"});
  MemChild child;
  const v1::Reply unknown = start(*d, child.pid(), "galaxy");
  ASSERT_TRUE(unknown.has_error());
  EXPECT_NE(unknown.error().message().find("'galaxy'"), std::string::npos);
  const v1::Reply missing = start(*d, child.pid(), "cgroup", "/ramguard-no-such-cgroup");
  ASSERT_TRUE(missing.has_error());
  EXPECT_NE(missing.error().message().find("'/ramguard-no-such-cgroup' does not exist"),
            std::string::npos)
      << missing.error().message();
  const v1::Reply not_memory = start(*d, child.pid(), "cgroup", "/proc");
  ASSERT_TRUE(not_memory.has_error());
  EXPECT_NE(not_memory.error().message().find("not a memory cgroup"), std::string::npos)
      << not_memory.error().message();
  const v1::Reply path_without_scope = start(*d, child.pid(), "tree", "/x");
  ASSERT_TRUE(path_without_scope.has_error());
  EXPECT_NE(path_without_scope.error().message().find("set scope to cgroup"), std::string::npos);
  // None of them left a run behind: a process-scope run on the same PID still starts.
  const v1::Reply ok = start(*d, child.pid(), "");
  EXPECT_FALSE(ok.has_error()) << ok.error().message();
  child.command("exit 0");
  child.wait();
}

}  // namespace
}  // namespace ramguard::testing
