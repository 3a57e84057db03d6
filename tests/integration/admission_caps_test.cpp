// Admission against what the machine really holds (docs/admission.md), real daemon and real
// processes: a run past its reservation is counted at what it holds (scenario M of
// tests/scenarios/README.md, scaled by 1/4), a process outside any run that takes the node's
// free memory refuses on the node cap, and a Load in a v1 memory cgroup whose limit is below
// the budget refuses on the cgroup cap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMB = 1'000'000ULL;
constexpr std::uint64_t kGB = 1'000'000'000ULL;
const std::filesystem::path kV1Memory = "/sys/fs/cgroup/memory";

v1::AdmitReply admit(const Daemon& d, std::uint64_t estimate, pid_t pid) {
  v1::Request request;
  request.mutable_admit()->set_job("caps");
  request.mutable_admit()->set_estimate_bytes(estimate);
  request.mutable_admit()->set_pid(static_cast<std::uint32_t>(pid));
  const v1::Reply reply = d.call(request);
  if (!reply.has_admit()) throw std::runtime_error("admit failed: " + reply.DebugString());
  return reply.admit();
}

void release(const Daemon& d, const std::string& id) {
  v1::Request request;
  request.mutable_release()->set_reservation_id(id);
  ASSERT_TRUE(d.call(request).has_release());
}

std::uint64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string name, unit;
  std::uint64_t kb = 0;
  while (in >> name >> kb >> unit) {
    if (name == "MemAvailable:") return kb * 1024;
  }
  throw std::runtime_error("no MemAvailable in /proc/meminfo");
}

// Admits a Load of the fedavg plan (50 MB model, 1 host) for `pid` and starts its run on the
// reservation, declaring `declared_model_bytes`; returns the run id.
std::string start_planned_run(const Daemon& d, pid_t pid, std::uint64_t declared_model_bytes) {
  v1::Request ask;
  ask.mutable_admit()->set_job("room");
  ask.mutable_admit()->set_plan("fedavg");
  ask.mutable_admit()->set_hosts(1);
  ask.mutable_admit()->mutable_model()->set_model_bytes(50 * kMB);
  ask.mutable_admit()->set_pid(static_cast<std::uint32_t>(pid));
  const v1::Reply admitted = d.call(ask);
  if (!admitted.has_admit() || !admitted.admit().admitted()) {
    throw std::runtime_error("admit: " + admitted.DebugString());
  }
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  start.mutable_run_start()->set_job("room");
  start.mutable_run_start()->set_model_bytes(declared_model_bytes);
  start.mutable_run_start()->set_hosts(1);
  start.mutable_run_start()->set_reservation_id(admitted.admit().reservation_id());
  const v1::Reply started = d.call(start);
  if (!started.has_run_start()) throw std::runtime_error("start: " + started.DebugString());
  return started.run_start().run_id();
}

v1::MarkReply begin_aggregation(const Daemon& d, const std::string& run_id) {
  v1::Request begin;
  begin.mutable_mark()->set_run_id(run_id);
  begin.mutable_mark()->set_kind(v1::MarkRequest::PHASE_BEGIN);
  begin.mutable_mark()->set_phase("aggregation");
  const v1::Reply marked = d.call(begin);
  if (!marked.has_mark()) throw std::runtime_error("mark: " + marked.DebugString());
  return marked.mark();
}

// Scenario M, budget 3 GB / 4: run A admitted at 50 MB holds 500 MB; B asks for 350 MB. The
// old rule (baseline + reservations + estimate) admitted B at about 0.41 GB of 0.75 GB.
TEST(AdmissionCaps, ARunPastItsReservationIsCountedAtWhatItHolds) {
  auto d = Daemon::with_args({"--budget", "750MB", "--interval", "100ms"});
  MemChild a;
  MemChild b;
  const v1::AdmitReply first = admit(*d, 50 * kMB, a.pid());
  ASSERT_TRUE(first.admitted()) << first.reason();
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(a.pid()));
  start.mutable_run_start()->set_job("scenario-m");
  start.mutable_run_start()->set_reservation_id(first.reservation_id());
  const v1::Reply started = d->call(start);
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();
  const std::string run = started.run_start().run_id();

  a.command("alloc grown " + std::to_string(500 * kMB));
  // The run's newest reading shows the growth (sampled every 100 ms).
  ASSERT_TRUE(eventually(
      [&] {
        v1::Request s;
        s.mutable_status()->set_run_id(run);
        const v1::StatusReply st = d->call(s).status();
        return st.runs_size() == 1 && st.runs(0).last().anon_bytes() >= 500 * kMB;
      },
      10s));

  const v1::AdmitReply second = admit(*d, 350 * kMB, b.pid());
  SCOPED_TRACE(second.reason());
  EXPECT_FALSE(second.admitted());
  EXPECT_TRUE(second.reservation_id().empty());
  EXPECT_EQ(second.reserved_bytes(), 50 * kMB);  // the bookkeeping alone would have fitted
  EXPECT_LT(second.baseline_bytes() + second.reserved_bytes() + second.estimate_bytes(), 750 * kMB);
  ASSERT_EQ(second.committed_runs_size(), 1);
  const v1::CommittedRun& term = second.committed_runs(0);
  EXPECT_EQ(term.run_id(), run);
  EXPECT_EQ(term.reserved_bytes(), 50 * kMB);
  EXPECT_GE(term.held_bytes(), 500 * kMB);
  EXPECT_EQ(term.counted_bytes(), term.held_bytes());
  EXPECT_EQ(second.committed_bytes(), term.counted_bytes());
  EXPECT_EQ(second.budget_cap(), "budget");
  EXPECT_LT(second.headroom_bytes(), 0);
  EXPECT_NE(second.reason().find("run " + run + " holds 0.5"), std::string::npos);
  EXPECT_NE(second.reason().find("reserved 50.0 MB: counted 0.5"), std::string::npos);
  EXPECT_NE(second.reason().find("refused by the budget cap"), std::string::npos);

  // What fits beside what A holds is still admitted.
  const v1::AdmitReply small = admit(*d, 100 * kMB, b.pid());
  EXPECT_TRUE(small.admitted()) << small.reason();

  // Refusals by cap are a metric.
  const double refused =
      metric_value(d->scrape_metrics(), "ramguard_admission_refusals_by_cap_total{cap=\"budget\"}");
  EXPECT_EQ(refused, 1.0);
}

// Scenario N: the configured budget is above what the node has free. An estimate that fits
// before another process (no run, no reservation) takes 2.5 GB is refused after it, on the
// node cap. Sized from MemAvailable at test time; the refused estimate is 0.5 GB above what
// the node had free just before, so other sessions' memory noise cannot admit it.
TEST(AdmissionCaps, AProcessOutsideAnyRunRefusesOnTheNodeCap) {
  const std::uint64_t before = mem_available_bytes();
  if (before < 4 * kGB) GTEST_SKIP() << "needs 4 GB available, has " << before;
  auto d = Daemon::with_args({"--budget", std::to_string(before + 64 * kGB)});
  MemChild loader;

  const v1::AdmitReply fits = admit(*d, before - 1250 * kMB, loader.pid());
  ASSERT_TRUE(fits.admitted()) << fits.reason();
  EXPECT_EQ(fits.budget_cap(), "node");
  EXPECT_GT(fits.node_available_bytes(), 0u);
  release(*d, fits.reservation_id());

  MemChild other;  // holds memory outside any run
  other.command("alloc hog " + std::to_string(2500 * kMB));
  const std::uint64_t after = mem_available_bytes();
  ASSERT_LT(after + 1 * kGB, before) << "the 2.5 GB allocation did not show in MemAvailable";
  const std::uint64_t estimate = after + 500 * kMB;
  const v1::AdmitReply refused = admit(*d, estimate, loader.pid());
  SCOPED_TRACE(refused.reason());
  EXPECT_FALSE(refused.admitted());
  EXPECT_LT(refused.baseline_bytes() + refused.committed_bytes() + estimate,
            refused.budget_bytes());  // it fits the configured budget
  EXPECT_EQ(refused.budget_cap(), "node");
  EXPECT_EQ(refused.effective_budget_bytes(), refused.node_cap_bytes());
  EXPECT_LT(refused.node_available_bytes(), estimate);
  EXPECT_NE(refused.reason().find("MemAvailable "), std::string::npos);
  EXPECT_NE(refused.reason().find("refused by the node cap"), std::string::npos);
}

// A Load whose process is in a v1 memory cgroup limited to 300 MB is refused an estimate of
// 400 MB under a 16 GB budget, naming the cgroup; 100 MB fits.
TEST(AdmissionCaps, ALoadInAMemoryCgroupRefusesOnTheCgroupCap) {
  if (!std::filesystem::exists(kV1Memory / "memory.limit_in_bytes") || ::geteuid() != 0) {
    GTEST_SKIP() << "needs root and the v1 memory controller at " << kV1Memory;
  }
  const std::filesystem::path dir = kV1Memory / ("ramguard-caps-" + std::to_string(::getpid()));
  std::filesystem::create_directory(dir);
  auto d = Daemon::with_args({"--budget", "16GB"});
  {
    MemChild loader;
    std::ofstream(dir / "memory.limit_in_bytes") << 300 * kMB << "\n";
    std::ofstream(dir / "cgroup.procs") << loader.pid() << "\n";

    const v1::AdmitReply refused = admit(*d, 400 * kMB, loader.pid());
    SCOPED_TRACE(refused.reason());
    EXPECT_FALSE(refused.admitted());
    EXPECT_EQ(refused.budget_cap(), "cgroup");
    // The kernel rounds the limit down to whole pages.
    EXPECT_LE(refused.cgroup_limit_bytes(), 300 * kMB);
    EXPECT_GT(refused.cgroup_limit_bytes(), 300 * kMB - 4096);
    EXPECT_EQ(refused.cgroup_dir(), dir.string());
    EXPECT_EQ(refused.effective_budget_bytes(), refused.cgroup_limit_bytes());
    EXPECT_NE(refused.reason().find("cgroup 0.30 GB (" + dir.string() + ")"), std::string::npos);
    EXPECT_NE(refused.reason().find("refused by the cgroup cap"), std::string::npos);

    const v1::AdmitReply fits = admit(*d, 100 * kMB, loader.pid());
    EXPECT_TRUE(fits.admitted()) << fits.reason();
    EXPECT_EQ(fits.budget_cap(), "cgroup");
  }
  std::error_code ec;
  std::filesystem::remove(dir, ec);
  EXPECT_FALSE(std::filesystem::exists(dir)) << ec.message();
}

// Re-checked as the run goes: a run admitted with the fedavg plan (model 50 MB, 1 host, so
// aggregation plans 3 copies + 0.16 GB = 0.31 GB over the baseline) whose cgroup limit is then
// lowered to 300 MB is told at aggregation's begin mark, naming the cgroup, before it allocates.
TEST(AdmissionCaps, APhaseBeginIsForecastAgainstTheRunsLoweredCgroupLimit) {
  if (!std::filesystem::exists(kV1Memory / "memory.limit_in_bytes") || ::geteuid() != 0) {
    GTEST_SKIP() << "needs root and the v1 memory controller at " << kV1Memory;
  }
  const std::filesystem::path dir = kV1Memory / ("ramguard-room-" + std::to_string(::getpid()));
  std::filesystem::create_directory(dir);
  auto d = Daemon::with_args({"--budget", "16GB"});
  {
    MemChild coordinator;
    const std::string run_id = start_planned_run(*d, coordinator.pid(), 50 * kMB);
    std::ofstream(dir / "memory.limit_in_bytes") << 300 * kMB << "\n";
    std::ofstream(dir / "cgroup.procs") << coordinator.pid() << "\n";
    // The daemon keeps a process's cgroup limit for a second (admissions come in bursts).
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    const v1::MarkReply marked = begin_aggregation(*d, run_id);
    std::vector<v1::Verdict> over;
    for (const v1::Verdict& v : marked.verdicts()) {
      if (v.kind() == "over_budget") over.push_back(v);
    }
    ASSERT_EQ(over.size(), 1u) << marked.DebugString();
    EXPECT_NE(over[0].summary().find("Forecast at the begin of aggregation"), std::string::npos);
    EXPECT_NE(over[0].summary().find("over the cgroup's limit 0.30 GB"), std::string::npos)
        << over[0].summary();
    EXPECT_NE(over[0].summary().find(dir.string()), std::string::npos) << over[0].summary();

    v1::Request end;
    end.mutable_run_end()->set_run_id(run_id);
    EXPECT_TRUE(d->call(end).has_run_end());
  }
  std::error_code ec;
  std::filesystem::remove(dir, ec);
  EXPECT_FALSE(std::filesystem::exists(dir)) << ec.message();
}

// The node term of the same re-check, read from the real MemAvailable: a run admitted with the
// fedavg plan on a 50 MB model that declares, at its start, a model of half the node's free
// memory plans an aggregation (3 copies) past what the node has; the begin mark says so, naming
// MemAvailable, while the configured budget (far above) stays silent.
TEST(AdmissionCaps, APhaseBeginIsForecastAgainstTheNodesFreeMemory) {
  const std::uint64_t available = mem_available_bytes();
  auto d = Daemon::with_args({"--budget", std::to_string(4 * available + 64 * kGB)});
  MemChild coordinator;
  const v1::MarkReply marked =
      begin_aggregation(*d, start_planned_run(*d, coordinator.pid(), available / 2));
  // Only the node's term: a cgroup limit the test machine may put over it is another verdict.
  std::vector<v1::Verdict> node;
  for (const v1::Verdict& v : marked.verdicts()) {
    if (v.figures().contains("cap_node")) node.push_back(v);
  }
  ASSERT_EQ(node.size(), 1u) << marked.DebugString();
  const v1::Verdict& v = node[0];
  EXPECT_EQ(v.kind(), "over_budget");
  EXPECT_EQ(v.severity(), v1::CRITICAL);
  EXPECT_NE(v.summary().find("available (MemAvailable) by"), std::string::npos) << v.summary();
  EXPECT_EQ(v.figures().at("cap_node"), 1);
  // MemAvailable as read by the daemon at the mark: between the test's reads before and after
  // it, widened by what other processes (parallel tests) change meanwhile.
  const std::uint64_t after = mem_available_bytes();
  const double cap = v.figures().at("cap_bytes");
  EXPECT_GE(cap, static_cast<double>(std::min(available, after)) - 0.5e9) << v.summary();
  EXPECT_LE(cap, static_cast<double>(std::max(available, after)) + 0.5e9) << v.summary();
}

// `budget: auto` as the sidecar uses it: the configured budget is MemTotal less the 1 GB
// system reserve (reply and metric); a Load in a memory cgroup limited to 300 MB is still
// refused 400 MB on its cgroup's limit, and its run is judged against that limit: the
// coordinator's container limit needs no copy in the configuration.
TEST(AdmissionCaps, AnAutoBudgetIsMemTotalLessTheReserveAndTheLoadsCgroupStillCaps) {
  if (!std::filesystem::exists(kV1Memory / "memory.limit_in_bytes") || ::geteuid() != 0) {
    GTEST_SKIP() << "needs root and the v1 memory controller at " << kV1Memory;
  }
  std::uint64_t total = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string name, unit;
    std::uint64_t kb = 0;
    while (total == 0 && in >> name >> kb >> unit) {
      if (name == "MemTotal:") total = kb * 1024;
    }
  }
  ASSERT_GT(total, kGB);
  const std::filesystem::path dir = kV1Memory / ("ramguard-auto-" + std::to_string(::getpid()));
  std::filesystem::create_directory(dir);
  auto d = Daemon::with_args({"--budget", "auto", "--interval", "100ms"});
  EXPECT_EQ(metric_value(d->scrape_metrics(), "ramguard_budget_bytes"),
            static_cast<double>(total - kGB));
  {
    MemChild loader;
    const v1::AdmitReply outside = admit(*d, 100 * kMB, loader.pid());
    EXPECT_TRUE(outside.admitted()) << outside.reason();
    EXPECT_EQ(outside.budget_bytes(), total - kGB);
    release(*d, outside.reservation_id());

    std::ofstream(dir / "memory.limit_in_bytes") << 300 * kMB << "\n";
    std::ofstream(dir / "cgroup.procs") << loader.pid() << "\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the limit's 1 s cache
    const v1::AdmitReply refused = admit(*d, 400 * kMB, loader.pid());
    EXPECT_FALSE(refused.admitted()) << refused.reason();
    EXPECT_EQ(refused.budget_cap(), "cgroup");
    EXPECT_EQ(refused.budget_bytes(), total - kGB);

    // Its run is judged against the cgroup's limit: 280 MB is past 90% of 300 MB.
    v1::Request start;
    start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(loader.pid()));
    start.mutable_run_start()->set_job("auto");
    const v1::Reply started = d->call(start);
    ASSERT_TRUE(started.has_run_start()) << started.DebugString();
    loader.command("alloc state " + std::to_string(280 * kMB));
    std::string headroom;
    for (int i = 0; i < 50 && headroom.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      v1::Request status;
      status.mutable_status()->set_run_id(started.run_start().run_id());
      const v1::Reply got = d->call(status);
      for (const v1::Verdict& v : got.status().runs(0).verdicts()) {
        if (v.kind() == "headroom") headroom = v.summary();
      }
    }
    EXPECT_NE(headroom.find("budget (the run's cgroup limit)"), std::string::npos) << headroom;
    EXPECT_NE(headroom.find("0.30 GB"), std::string::npos) << headroom;
  }
  std::error_code ec;
  std::filesystem::remove(dir, ec);
  EXPECT_FALSE(std::filesystem::exists(dir)) << ec.message();
}

}  // namespace
}  // namespace ramguard::testing
