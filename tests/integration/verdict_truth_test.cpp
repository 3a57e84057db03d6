// Verdicts a careful engineer would give after reading the kernel's own figures, on real
// processes and the real daemon: an exit is not a release, memory freed right after the end is
// seen right after it, shared memory counts once (in a tree, between marks and at them), and a
// process too short for any reading still has its exact peak through `ramguard exec`.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

v1::Reply start_run(const Daemon& d, pid_t pid, const std::string& scope = "process") {
  v1::Request request;
  auto& start = *request.mutable_run_start();
  start.set_pid(static_cast<std::uint32_t>(pid));
  start.set_job("verdict-truth");
  start.set_scope(scope);
  start.set_model_bytes(256 * kMiB);
  return d.call(request);
}

v1::Reply end_run(const Daemon& d, const std::string& run_id) {
  v1::Request request;
  request.mutable_run_end()->set_run_id(run_id);
  return d.call(request);
}

v1::RunStatus status(const Daemon& d, const std::string& run_id) {
  v1::Request request;
  request.mutable_status()->set_run_id(run_id);
  const v1::Reply reply = d.call(request);
  return reply.status().runs_size() == 1 ? reply.status().runs(0) : v1::RunStatus{};
}

// The run's release verdict once there is one (empty kind on timeout).
v1::Verdict release_of(const Daemon& d, const std::string& run_id,
                       std::chrono::milliseconds timeout) {
  v1::Verdict out;
  eventually(
      [&] {
        const v1::RunStatus run = status(d, run_id);
        for (const auto& v : run.verdicts()) {
          if (v.kind() == "release") {
            out = v;
            return true;
          }
        }
        return false;
      },
      timeout, 20ms);
  return out;
}

std::string describe(const v1::RunStatus& run) {
  std::string out = "state=" + run.state();
  for (const auto& v : run.verdicts()) out += "\n  " + v.kind() + ": " + v.summary();
  return out;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* kReleaseConfig = "growth:\n  settle: 300ms\nrelease:\n  slack: 64MiB\n  grace: 5s\n";

// A run on CHILD that takes 256 MiB and ends holding it; CHILD then sleeps AFTER_MS and
// exits. Returns the run's release verdict (empty kind on timeout).
v1::Verdict release_after_exit(Daemon& d, int after_ms, std::string& run) {
  MemChild child;
  const v1::Reply started = start_run(d, child.pid());
  EXPECT_FALSE(started.has_error()) << started.error().message();
  run = started.run_start().run_id();
  child.command("alloc model " + std::to_string(256 * kMiB));
  EXPECT_FALSE(end_run(d, run).has_error());
  child.command("sleep " + std::to_string(after_ms));
  child.command("exit 0");
  child.wait();
  return release_of(d, run, 5s);
}

// Held 256 MiB for a second after the end (past the 300 ms settle window), then exited: the
// exit returned the memory, the application did not. Release fails, naming what and how long.
TEST(ReleaseTruth, HeldPastTheSettleWindowThenExitedFails) {
  auto d = Daemon::with_config(kReleaseConfig, {"--interval", "100ms"});
  std::string run;
  const v1::Verdict release = release_after_exit(*d, 1000, run);
  ASSERT_EQ(release.kind(), "release") << describe(status(*d, run)) << d->log_text();
  EXPECT_FALSE(release.passed()) << release.summary();
  EXPECT_EQ(release.severity(), v1::WARNING) << release.summary();
  EXPECT_TRUE(has(release.summary(), "until the process exited")) << release.summary();
  EXPECT_GE(release.figures().at("held_seconds"), 0.9) << release.summary();
  EXPECT_GE(release.figures().at("held_bytes"), 240.0 * kMiB) << release.summary();
}

// Exited 0.2 s after the end, inside the settle window: nothing shows a release. Not a pass.
// The window is 1.5 s here, not 300 ms: on a loaded machine the child's exit can come more
// than 300 ms after the end, which is the other test's case (held, then exited: a fail).
TEST(ReleaseTruth, ExitRightAfterTheEndIsNotVerified) {
  auto d = Daemon::with_config("growth:\n  settle: 1500ms\nrelease:\n  slack: 64MiB\n  grace: 5s\n",
                               {"--interval", "100ms"});
  std::string run;
  const v1::Verdict release = release_after_exit(*d, 200, run);
  ASSERT_EQ(release.kind(), "release") << describe(status(*d, run));
  EXPECT_FALSE(release.passed()) << release.summary();
  EXPECT_EQ(release.severity(), v1::INFO) << release.summary();
  EXPECT_TRUE(has(release.summary(), "Release not verified")) << release.summary();
}

// The README's own pattern: the run ends, the locals are freed 50 ms later, the process lives
// on. The daemon reads right after the end, so the release passes at once whatever the grace.
TEST(ReleaseTruth, MemoryFreedRightAfterTheEndPassesAtOnce) {
  auto d = Daemon::with_config(kReleaseConfig);  // the default 2 s sampling interval
  MemChild child;
  const v1::Reply started = start_run(*d, child.pid());
  ASSERT_FALSE(started.has_error()) << started.error().message();
  const std::string run = started.run_start().run_id();
  child.command("alloc model " + std::to_string(256 * kMiB));
  ASSERT_FALSE(end_run(*d, run).has_error());
  child.command("sleep 50");
  child.command("free model");
  const v1::Verdict release = release_of(*d, run, 6s);
  ASSERT_EQ(release.kind(), "release") << describe(status(*d, run));
  EXPECT_TRUE(release.passed()) << release.summary();
  EXPECT_LT(release.figures().at("taken_seconds"), 1.0) << release.summary();
}

// A segment in /dev/shm, outlived by its process past the grace: held memory, not released.
TEST(ReleaseTruth, SharedMemoryKeptPastTheGraceFails) {
  auto d = Daemon::with_config("growth:\n  settle: 300ms\nrelease:\n  slack: 64MiB\n  grace: 1s\n",
                               {"--interval", "100ms"});
  MemChild child;
  const std::string path = "/dev/shm/ramguard-truth-" + std::to_string(::getpid());
  const v1::Reply started = start_run(*d, child.pid());
  ASSERT_FALSE(started.has_error()) << started.error().message();
  const std::string run = started.run_start().run_id();
  child.command("shm seg " + path + " " + std::to_string(200 * kMiB));
  std::filesystem::remove(path);  // the mapping keeps it
  // Between marks too: the periodic reading counts it (admission's view of the run).
  EXPECT_TRUE(
      eventually([&] { return status(*d, run).last().shmem_bytes() >= 190 * kMiB; }, 3s, 50ms))
      << describe(status(*d, run));
  ASSERT_FALSE(end_run(*d, run).has_error());
  const v1::Verdict release = release_of(*d, run, 5s);
  ASSERT_EQ(release.kind(), "release") << describe(status(*d, run));
  EXPECT_FALSE(release.passed()) << release.summary();
  EXPECT_GE(release.figures().at("held_bytes"), 190.0 * kMiB) << release.summary();
}

// A coordinator keeps two 100 MiB model copies in /dev/shm; its two workers map and read them
// (torch.multiprocessing's shared tensors). The node holds 200 MiB once: counted once in the
// tree's readings, at marks and between them, and no over_budget on a budget that fits one count.
TEST(SharedMemory, ATreeCountsASegmentItsWorkersShareOnce) {
  auto d = Daemon::with_config("budget: 400MiB\n", {"--interval", "100ms"});
  MemChild coordinator;
  const std::string path = "/dev/shm/ramguard-tree-" + std::to_string(::getpid());
  coordinator.command("shm states " + path + " " + std::to_string(200 * kMiB));
  coordinator.command("worker " + path + " " + std::to_string(200 * kMiB));
  coordinator.command("worker " + path + " " + std::to_string(200 * kMiB));
  std::filesystem::remove(path);
  const v1::Reply started = start_run(*d, coordinator.pid(), "tree");
  ASSERT_FALSE(started.has_error()) << started.error().message();
  const std::string run = started.run_start().run_id();
  // Let the workers finish reading, then a phase: mark readings and exact peaks.
  std::this_thread::sleep_for(500ms);
  for (const auto kind : {v1::MarkRequest::PHASE_BEGIN, v1::MarkRequest::PHASE_END}) {
    v1::Request mark;
    mark.mutable_mark()->set_run_id(run);
    mark.mutable_mark()->set_kind(kind);
    mark.mutable_mark()->set_phase("aggregation");
    const v1::Reply reply = d->call(mark);
    ASSERT_FALSE(reply.has_error()) << reply.error().message();
  }
  std::this_thread::sleep_for(500ms);  // periodic readings after the marks
  const v1::RunStatus s = status(*d, run);
  EXPECT_NEAR(static_cast<double>(s.last().shmem_bytes()), 200.0 * kMiB, 20.0 * kMiB)
      << describe(s);
  EXPECT_LT(s.peak_bytes(), 280 * kMiB) << describe(s);  // 3 x 200 MiB without counting once
  for (const auto& v : s.verdicts()) EXPECT_NE(v.kind(), "over_budget") << v.summary();
  ASSERT_FALSE(end_run(*d, run).has_error());
}

// Two runs whose coordinators map one 128 MiB /dev/shm segment: each run's counted memory holds
// it, but the node holds it once, and so does admission's sum of what the runs hold.
TEST(SharedMemory, TwoRunsMappingOneSegmentAreHeldOnceInAdmission) {
  auto d = Daemon::with_args({"--interval", "100ms"});
  const std::string path = "/dev/shm/ramguard-runs-" + std::to_string(::getpid());
  MemChild first;
  MemChild second;
  first.command("shm states " + path + " " + std::to_string(128 * kMiB));
  second.command("shm states " + path + " " + std::to_string(128 * kMiB));
  std::filesystem::remove(path);
  std::vector<std::string> runs;
  for (const MemChild* child : {&first, &second}) {
    const v1::Reply started = start_run(*d, child->pid());
    ASSERT_FALSE(started.has_error()) << started.error().message();
    runs.push_back(started.run_start().run_id());
  }
  std::this_thread::sleep_for(300ms);  // periodic readings: each run's shmem holds the segment
  for (const auto& run : runs) {
    const v1::RunStatus s = status(*d, run);
    ASSERT_GE(s.last().shmem_bytes(), 120 * kMiB) << describe(s);
  }
  v1::Request admit;
  admit.mutable_admit()->set_job("verdict-truth");
  admit.mutable_admit()->set_estimate_bytes(1);
  const v1::Reply reply = d->call(admit);
  ASSERT_FALSE(reply.has_error()) << reply.error().message();
  const auto& a = reply.admit();
  ASSERT_EQ(a.committed_runs_size(), 2) << reply.DebugString();
  std::uint64_t held = 0;
  for (const auto& term : a.committed_runs()) held += term.held_bytes();
  EXPECT_GE(held, 128 * kMiB) << reply.DebugString();
  EXPECT_LT(held, 180 * kMiB) << "the segment is counted once: " << reply.DebugString();
  EXPECT_LT(a.committed_bytes(), 180 * kMiB) << reply.DebugString();
  for (const auto& run : runs) ASSERT_FALSE(end_run(*d, run).has_error());
}

// A process too short for any reading: `ramguard exec` hands the daemon its ru_maxrss, so the
// run's peak is the process's (50 MB touched in 0.2 s), not the baseline's.
TEST(ExecPeak, AShortProcessKeepsItsPeak) {
  auto d = Daemon::with_args({});
  const CommandResult result = run_command(
      {cli_path(), "--socket", d->socket_path().string(), "exec", "--job", "short", "--", "python3",
       "-c", "import time; b = bytearray(50 * 10**6); time.sleep(0.2)"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  v1::Request list;
  list.mutable_list_runs();
  const v1::Reply runs = d->call(list);
  ASSERT_EQ(runs.list_runs().runs_size(), 1) << result.output;
  const std::string run = runs.list_runs().runs(0).run_id();
  EXPECT_TRUE(eventually([&] { return status(*d, run).peak_bytes() >= 50'000'000; }, 3s, 50ms))
      << describe(status(*d, run)) << "\npeak " << status(*d, run).peak_bytes() << "\n"
      << result.output;
}

// A process-scope coordinator killed between marks (as by the OOM killer) after a spike the
// periodic readings never saw: its last known VmHWM is the peak at death, the run's and its
// open phase's (counted: the page cache beside it is left out, as at a mark).
TEST(DeathPeak, AProcessKilledBetweenMarksKeepsItsLastKnownHighWaterMark) {
  auto d = Daemon::with_args({"--interval", "1s"});
  MemChild child;
  const v1::Reply started = start_run(*d, child.pid());
  ASSERT_FALSE(started.has_error()) << started.error().message();
  const std::string run = started.run_start().run_id();
  v1::Request begin;
  begin.mutable_mark()->set_run_id(run);
  begin.mutable_mark()->set_kind(v1::MarkRequest::PHASE_BEGIN);
  begin.mutable_mark()->set_phase("aggregation");
  ASSERT_FALSE(d->call(begin).has_error());
  // Touched and unmapped inside one command: no reading holds it, the high-water mark does.
  child.command("spike " + std::to_string(192 * kMiB) + " 0");
  // A reading after the spike: its VmHWM is 192 MiB above the baseline.
  std::this_thread::sleep_for(1300ms);
  const v1::RunStatus before = status(*d, run);
  ASSERT_LT(before.peak_bytes(), 150 * kMiB) << "a reading saw the spike: " << describe(before);
  child.kill(SIGKILL);
  child.wait();
  v1::RunStatus s;
  ASSERT_TRUE(eventually(
      [&] {
        s = status(*d, run);
        return s.state() == "exited";
      },
      10s, 20ms))
      << describe(s);
  EXPECT_GE(s.peak_bytes(), 180 * kMiB) << describe(s);
  ASSERT_GE(s.phases_size(), 1) << describe(s);
  EXPECT_GE(s.phases(s.phases_size() - 1).peak_bytes(), 180 * kMiB) << describe(s);
  const v1::Verdict* exited = nullptr;
  for (const auto& v : s.verdicts()) {
    if (v.kind() == "exited") exited = &v;
  }
  ASSERT_NE(exited, nullptr) << describe(s);
  EXPECT_GE(exited->figures().at("peak_bytes"), 180.0 * kMiB) << exited->summary();
}

}  // namespace
}  // namespace ramguard::testing
