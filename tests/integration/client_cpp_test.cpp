// The C++ client: libramguard (Client, Run, PhaseGuard) against the real daemon
// guarding a real process (memchild) that allocates and frees memory inside the phases. Every
// figure is checked against what the process itself reported (its RSS after each command).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "ramguard/client.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kModel = 32 * kMiB;
// Kernel RSS counters and memchild's own statm read may differ by a few pages.
constexpr double kTolerance = 4.0 * kMiB;
const std::string kJob = "cpp-coordinator";

std::string mib(std::uint64_t n) {
  return std::to_string(n * kMiB);
}

const v1::RunStatus& only_run(const v1::StatusReply& status) {
  if (status.runs_size() != 1) throw std::runtime_error("expected one run in status");
  return status.runs(0);
}

// The coordinator's story at a small scale: admit with the fedavg plan, load (a staging spike),
// three rounds of aggregation (host updates + result, all freed before the phase ends) and
// synchronization (a short outbound spike), with 16 MiB kept per round so the boundaries climb.
TEST(ClientCpp, CoordinatorAdmitsRunsRoundsWithPhaseGuardsAndEnds) {
  auto d = Daemon::with_config("growth:\n  settle: 300ms\nmetrics: { job_names: plain }\n");
  MemChild child;
  const auto pid = static_cast<std::uint32_t>(child.pid());
  ramguard::Client client(d->socket_path().string());
  EXPECT_EQ(client.hello().protocol_version(), 1u);

  AdmitOptions admit;
  admit.job = kJob;
  admit.model_bytes = kModel;
  admit.plan = "fedavg";
  admit.hosts = 2;
  admit.pid = pid;
  const v1::AdmitReply admitted = client.admit(admit);
  ASSERT_TRUE(admitted.admitted()) << admitted.reason();
  // Default fedavg plan: aggregation holds global + 2 host updates + result = 4 copies, + 0.16 GB
  // (the C++ client reports no allocator: no allocator term).
  EXPECT_EQ(admitted.estimate_bytes(), 4 * kModel + 160'000'000ULL);
  EXPECT_EQ(admitted.estimate_source(), "plan:fedavg");
  EXPECT_EQ(admitted.budget_bytes(), 16'000'000'000ULL);
  EXPECT_GT(admitted.baseline_bytes(), 0u);
  EXPECT_FALSE(admitted.reservation_id().empty());

  RunOptions options;
  options.pid = pid;
  options.job = kJob;
  options.labels = {{"build", "cpp"}};
  options.model_bytes = kModel;
  options.declared_rounds = 3;
  options.hosts = 2;
  options.reservation_id = admitted.reservation_id();
  ramguard::Run run = client.start_run(options);
  ASSERT_FALSE(run.id().empty());
  ASSERT_TRUE(run.start_reply().exact_peaks()) << "clear_refs must be writable for own children";
  {
    const v1::StatusReply status = client.status();
    ASSERT_EQ(status.reservations_size(), 1);
    EXPECT_EQ(status.reservations(0).run_id(), run.id()) << "the run claims the reservation";
    EXPECT_EQ(status.reserved_bytes(), admitted.estimate_bytes());
  }

  // Load: the global model stays, a 192 MiB staging buffer lives 30 ms. Ended by the guard.
  std::uint64_t before_load = 0;
  {
    auto load = run.phase("load");
    before_load = child.command("rss");
    child.command("alloc global " + mib(32));
    child.command("spike " + mib(192) + " 30");
    EXPECT_EQ(only_run(client.status(run.id())).current_phase(), "load");
  }
  std::uint64_t load_peak = 0;
  {
    const v1::RunStatus s = only_run(client.status(run.id()));
    EXPECT_EQ(s.current_phase(), "") << "the guard ended the phase at scope exit";
    ASSERT_EQ(s.phases_size(), 1);
    load_peak = s.phases(0).peak_bytes();
    EXPECT_TRUE(s.phases(0).peak_exact());
    EXPECT_GE(static_cast<double>(load_peak),
              static_cast<double>(before_load + 224 * kMiB) - kTolerance);
  }

  std::vector<std::uint64_t> expected_boundary;
  for (std::uint32_t round = 1; round <= 3; ++round) {
    const std::string r = std::to_string(round);
    {
      auto aggregation = run.phase("aggregation");
      const std::uint64_t at_begin = child.command("rss");
      child.command("alloc update1 " + mib(32));
      child.command("alloc update2 " + mib(32));
      child.command("alloc result " + mib(32));
      child.command("free update1");
      child.command("free update2");
      child.command("free result");
      child.command("alloc keep" + r + " " + mib(16));  // survives the round
      const v1::MarkReply end = aggregation.end();
      EXPECT_TRUE(end.peak_exact());
      EXPECT_EQ(end.round(), round);
      EXPECT_GT(end.phase_duration_seconds(), 0.0);
      // Exact: the three copies were all freed before the end mark, yet the peak holds them;
      // and the high-water mark was reset at begin, so load's larger peak does not leak in.
      EXPECT_NEAR(static_cast<double>(end.phase_peak_bytes()),
                  static_cast<double>(at_begin + 96 * kMiB), kTolerance)
          << "round " << round;
      EXPECT_LT(end.phase_peak_bytes(), load_peak);
    }
    {
      auto synchronization = run.phase("synchronization");
      child.command("spike " + mib(64) + " 20");
    }
    const std::uint64_t rss = child.command("rss");
    expected_boundary.push_back(rss);
    const v1::MarkReply boundary = run.round_end();
    EXPECT_EQ(boundary.round(), round);
    EXPECT_TRUE(boundary.reading().complete());
    EXPECT_NEAR(static_cast<double>(boundary.reading().rss_bytes()), static_cast<double>(rss),
                kTolerance);
    EXPECT_TRUE(boundary.stored());
  }

  // Floors settle 300 ms after each round end; the last one is read by the settle timer.
  v1::RunStatus s;
  ASSERT_TRUE(eventually(
      [&] {
        s = client.report(run.id()).run();
        return s.boundaries_size() == 3 &&
               d->scrape_metrics().find("ramguard_boundary_floor_bytes{ramguard_job=\"" + kJob) !=
                   std::string::npos;
      },
      5s));
  EXPECT_EQ(s.state(), "active");
  EXPECT_EQ(s.round(), 3u);
  EXPECT_EQ(s.labels().at("build"), "cpp");
  ASSERT_EQ(s.phases_size(), 7);  // load + 3 x (aggregation, synchronization)
  for (const v1::PhaseStat& p : s.phases()) {
    EXPECT_TRUE(p.peak_exact()) << p.phase();
    EXPECT_GT(p.duration_seconds(), 0.0) << p.phase();
    if (p.phase() == "synchronization") {
      // The 20 ms spike had ended long before the end mark; the high-water mark kept it.
      EXPECT_GE(static_cast<double>(p.peak_bytes()),
                static_cast<double>(expected_boundary[p.round() - 1] + 64 * kMiB) - kTolerance);
    }
  }
  for (int i = 0; i < 3; ++i) {
    const v1::BoundaryReading& b = s.boundaries(i);
    EXPECT_EQ(b.round(), static_cast<std::uint32_t>(i + 1));
    EXPECT_NEAR(static_cast<double>(b.reading().rss_bytes()),
                static_cast<double>(expected_boundary[static_cast<std::size_t>(i)]), kTolerance);
    EXPECT_GT(b.floor_bytes(), 0u);
    EXPECT_LE(b.floor_bytes(), b.reading().rss_bytes());
    if (i > 0) {  // 16 MiB kept per round
      EXPECT_NEAR(static_cast<double>(b.reading().rss_bytes()) -
                      static_cast<double>(s.boundaries(i - 1).reading().rss_bytes()),
                  16.0 * kMiB, kTolerance);
    }
  }

  // Metrics: per-job series carry the last aggregation peak and the last boundary exactly.
  const std::string scrape = d->scrape_metrics();
  // Labels print sorted: phase, ramguard_job, run_id.
  const std::string job = "ramguard_job=\"" + kJob + "\",run_id=\"" + run.id() + "\"";
  EXPECT_EQ(metric_value(scrape, "ramguard_phase_peak_bytes{phase=\"aggregation\"," + job + "}"),
            static_cast<double>(s.phases(5).peak_bytes()))
      << scrape;
  EXPECT_EQ(metric_value(scrape, "ramguard_phase_peak_bytes{phase=\"load\"," + job + "}"),
            static_cast<double>(load_peak));
  EXPECT_EQ(metric_value(scrape, "ramguard_boundary_round{" + job + "}"), 3.0);
  EXPECT_EQ(metric_value(scrape, "ramguard_boundary_rss_bytes{" + job + "}"),
            static_cast<double>(s.boundaries(2).reading().rss_bytes()));
  EXPECT_EQ(metric_value(scrape, "ramguard_boundary_floor_bytes{" + job + "}"),
            static_cast<double>(s.boundaries(2).floor_bytes()));
  EXPECT_EQ(metric_value(scrape, "ramguard_reserved_bytes"),
            static_cast<double>(admitted.estimate_bytes()));

  const v1::RunEndReply ended = run.end();
  EXPECT_GE(ended.peak_bytes(), load_peak);
  EXPECT_TRUE(ended.stored());
  const v1::StatusReply after = client.status(run.id());
  EXPECT_EQ(only_run(after).state(), "ended");
  EXPECT_EQ(after.reserved_bytes(), 0u) << "the reservation ends with its run";
  EXPECT_EQ(after.reservations_size(), 0);
  EXPECT_TRUE(eventually(
      [&] { return metric_value(d->scrape_metrics(), "ramguard_reserved_bytes") == 0.0; }, 2s));
}

// A phase whose body throws is still ended by its guard, and the daemon's error replies reach
// the caller as ClientError with the protocol's code.
TEST(ClientCpp, PhaseGuardEndsThePhaseWhenTheBodyThrows) {
  auto d = Daemon::with_args({});
  MemChild child;
  ramguard::Client client(d->socket_path().string());
  RunOptions options;
  options.pid = static_cast<std::uint32_t>(child.pid());
  options.job = "cpp-throws";
  ramguard::Run run = client.start_run(options);
  const std::uint64_t rss = child.command("rss");
  EXPECT_THROW(
      {
        auto save = run.phase("save");
        child.command("spike " + mib(48) + " 10");
        throw std::runtime_error("serialization failed");
      },
      std::runtime_error);
  const v1::RunStatus s = only_run(client.status(run.id()));
  EXPECT_EQ(s.current_phase(), "");
  ASSERT_EQ(s.phases_size(), 1);
  EXPECT_GT(s.phases(0).duration_seconds(), 0.0);
  EXPECT_GE(static_cast<double>(s.phases(0).peak_bytes()),
            static_cast<double>(rss + 48 * kMiB) - kTolerance);
  // The phase is closed: another end without begin is refused, naming the problem.
  try {
    run.phase_end("save");
    FAIL() << "a second end of 'save' must be refused";
  } catch (const ClientError& e) {
    EXPECT_EQ(e.kind(), ClientError::Kind::kServer);
    EXPECT_EQ(e.code(), v1::Error::FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find("save"), std::string::npos) << e.what();
  }
  run.end();
}

// A coordinator started by `ramguard exec` joins its run from RAMGUARD_SOCKET and RAMGUARD_RUN.
TEST(ClientCpp, RunAttachPicksUpSocketAndRunFromTheEnvironment) {
  auto d = Daemon::with_args({});
  MemChild child;
  std::string run_id;
  {
    ramguard::Client starter(d->socket_path().string());
    RunOptions options;
    options.pid = static_cast<std::uint32_t>(child.pid());
    options.job = "cpp-attach";
    run_id = starter.start_run(options).id();
  }
  ::setenv("RAMGUARD_SOCKET", d->socket_path().c_str(), 1);
  ::setenv("RAMGUARD_RUN", run_id.c_str(), 1);
  ramguard::Client client;  // the socket from the environment
  ramguard::Run run = ramguard::Run::attach(client);
  ::unsetenv("RAMGUARD_SOCKET");
  ::unsetenv("RAMGUARD_RUN");
  EXPECT_EQ(client.socket_path(), d->socket_path().string());
  EXPECT_EQ(run.id(), run_id);
  {
    auto aggregation = run.phase("aggregation");
    child.command("alloc a " + mib(24));
  }
  EXPECT_EQ(run.round_end().round(), 1u);
  const v1::RunStatus s = only_run(client.status(run_id));
  ASSERT_EQ(s.phases_size(), 1);
  EXPECT_EQ(s.phases(0).phase(), "aggregation");
  EXPECT_GE(s.phases(0).peak_bytes(), 24 * kMiB);
  EXPECT_EQ(s.boundaries_size(), 1);
  run.end();
}

// The guard never stalls the step it guards: round ends every 50 ms through a 2 s SIGSTOP of the
// daemon. Each mark gives up within the client's mark bound (slack for a loaded machine), the loop
// keeps its pace, the mark that timed out is dropped when the daemon resumes, and every round the
// daemon recorded is one the client was told was delivered, at the time the client sent it.
TEST(ClientCpp, MarksThroughAStoppedDaemonWaitAtMostTheMarkBound) {
  using namespace std::chrono;
  auto d = Daemon::with_args({});
  MemChild child;
  ramguard::Client client(d->socket_path().string());
  ASSERT_EQ(client.options().mark_timeout, milliseconds(50));
  RunOptions options;
  options.pid = static_cast<std::uint32_t>(child.pid());
  options.job = "cpp-stall";
  ramguard::Run run = client.start_run(options);

  std::vector<std::int64_t> sent_unix_ms;  // when each round end was sent, delivered or not
  std::size_t delivered_count = 0;
  nanoseconds worst{0};
  int during_stop = 0;
  int failed_during_stop = 0;
  bool stopped = false;
  bool resumed = false;
  const auto begin = steady_clock::now();
  auto next = begin;
  while (steady_clock::now() - begin < seconds(8)) {
    const auto elapsed = steady_clock::now() - begin;
    if (!stopped && elapsed >= seconds(1)) {
      ASSERT_EQ(::kill(d->pid(), SIGSTOP), 0);
      stopped = true;
    }
    if (stopped && !resumed && elapsed >= seconds(3)) {
      ASSERT_EQ(::kill(d->pid(), SIGCONT), 0);
      resumed = true;
    }
    const auto sent_ms =
        duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    const auto started = steady_clock::now();
    bool delivered = true;
    try {
      run.round_end();
    } catch (const ClientError& e) {
      delivered = false;
      EXPECT_TRUE(e.kind() == ClientError::Kind::kTimeout ||
                  e.kind() == ClientError::Kind::kTransport)
          << e.what();
    }
    worst = std::max(worst, steady_clock::now() - started);
    sent_unix_ms.push_back(sent_ms);
    delivered_count += delivered ? 1 : 0;
    if (stopped && !resumed) {
      ++during_stop;
      failed_during_stop += delivered ? 0 : 1;
    }
    next += milliseconds(50);
    std::this_thread::sleep_until(next);
  }
  ::kill(d->pid(), SIGCONT);  // whatever happened above

  const double worst_ms = duration<double, std::milli>(worst).count();
  std::printf("worst mark call %.1f ms, %d marks while stopped\n", worst_ms, during_stop);
  EXPECT_LE(worst_ms, 50.0 + 250.0);
  EXPECT_GE(during_stop, 16);  // 40 at the loop's pace
  EXPECT_EQ(failed_during_stop, during_stop);
  const auto lines = d->log_lines();
  const auto logged = [&](const char* event) {
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& l) {
      return l.find(event) != std::string::npos;
    }));
  };
  EXPECT_GE(logged("event=run.mark_dropped_late"), 1u);
  const v1::RunStatus s = only_run(client.status(run.id()));
  // Status lists the latest boundaries; the earlier ones are counted. Every delivered round end
  // is recorded; beyond those, only a mark read in time whose reply missed the deadline (a slow
  // daemon, e.g. under a sanitizer), which the daemon logs.
  const std::size_t recorded = s.earlier_boundaries().count() + s.boundaries_size();
  EXPECT_GE(recorded, delivered_count);
  EXPECT_LE(recorded, delivered_count + logged("event=control.mark_reply_late"));
  // Each at the time its client sent it (the mark's own time), none at the daemon's resumption.
  for (const v1::BoundaryReading& b : s.boundaries()) {
    const std::int64_t at = b.reading().at_unix_ms();
    EXPECT_TRUE(std::any_of(sent_unix_ms.begin(), sent_unix_ms.end(),
                            [&](std::int64_t sent) { return at >= sent - 5 && at <= sent + 60; }))
        << "round " << b.round() << " recorded at " << at;
  }
  run.end();
}

// Guarded, libramguard behaves as the Python client does by default: the daemon killed in the
// middle of a phase costs the training loop nothing (no exception, marks dropped), and once a
// restarted daemon has recovered the run, the next mark first resynchronises the phases: the one
// left meanwhile is ended, the one entered meanwhile is begun.
TEST(ClientCpp, AGuardedRunTrainsThroughADaemonRestartAndResynchronisesItsPhases) {
  auto d = Daemon::with_args({});
  // The client's socket path outlives the first daemon: a link, pointed at the second later.
  const std::filesystem::path link = make_temp_dir("cpp-guarded") / "ramguard.sock";
  std::filesystem::create_symlink(d->socket_path(), link);
  MemChild child;
  std::vector<std::string> warnings;
  ClientOptions options;
  options.socket_path = link.string();
  options.guarded = true;
  options.on_warning = [&](const std::string& line) { warnings.push_back(line); };
  ramguard::Client client(options);
  RunOptions run_options;
  run_options.pid = static_cast<std::uint32_t>(child.pid());
  run_options.job = "cpp-guarded";
  ramguard::Run run = client.start_run(run_options);
  EXPECT_TRUE(run.phase_begin("aggregation").stored());
  const std::filesystem::path state_dir = d->state_dir();
  d->kill_hard();

  EXPECT_NO_THROW(run.phase_end("aggregation"));
  EXPECT_NO_THROW(run.phase_begin("save"));
  EXPECT_FALSE(run.in_step());
  EXPECT_EQ(run.dropped_marks(), 2u);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("marks are dropped until ramguardd answers"), std::string::npos)
      << warnings.front();

  Daemon::Options restart;
  restart.state_dir = state_dir;
  auto d2 = Daemon::start(restart);
  ASSERT_FALSE(d2->wait_for_log("event=recovery.resumed").empty()) << d2->log_text();
  std::filesystem::remove(link);
  std::filesystem::create_symlink(d2->socket_path(), link);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the first backoff

  EXPECT_NO_THROW(run.round_end());
  EXPECT_TRUE(run.in_step());
  EXPECT_EQ(run.dropped_marks(), 2u);
  const std::string said = [&] {
    std::string all;
    for (const std::string& w : warnings) all += w + "\n";
    return all;
  }();
  EXPECT_NE(said.find("ending phase aggregation"), std::string::npos) << said;
  EXPECT_NE(said.find("beginning phase save again"), std::string::npos) << said;

  v1::Request request;
  request.mutable_status()->set_run_id(run.id());
  const v1::RunStatus status = d2->call(request).status().runs(0);
  EXPECT_EQ(status.state(), "active");
  EXPECT_EQ(status.current_phase(), "save");
  EXPECT_EQ(status.round(), 1u);
  bool aggregation_closed = false;
  for (const v1::PhaseStat& p : status.phases()) {
    if (p.phase() == "aggregation") aggregation_closed = p.duration_seconds() > 0;
  }
  EXPECT_TRUE(aggregation_closed);

  d2->kill_hard();
  EXPECT_NO_THROW(run.end());  // not delivered, said so, nothing thrown
  EXPECT_NE(warnings.back().find("the end was not delivered"), std::string::npos)
      << warnings.back();
}

// A phase is recorded as long as it was through a 3 s stop of the daemon: the coordinator
// trains in 76 ms phases, so when it resynchronises it has left the phase the daemon holds and
// usually entered it again. The daemon's phase ends when the coordinator first left it (the
// resynchronised end carries that time), not at the resynchronisation (3.6 s, the stop).
TEST(ClientCpp, AResynchronisedPhaseEndCarriesTheTimeThePhaseWasLeft) {
  using namespace std::chrono;
  auto d = Daemon::with_args({});
  MemChild child;
  ClientOptions options;
  options.socket_path = d->socket_path().string();
  options.guarded = true;
  std::vector<std::string> warnings;
  options.on_warning = [&](const std::string& line) { warnings.push_back(line); };
  ramguard::Client client(options);
  RunOptions run_options;
  run_options.pid = static_cast<std::uint32_t>(child.pid());
  run_options.job = "cpp-resync-time";
  ramguard::Run run = client.start_run(run_options);

  bool stopped = false;
  bool resumed = false;
  const auto begin = steady_clock::now();
  while (steady_clock::now() - begin < seconds(7)) {
    run.phase_begin("train");
    // Stopped inside a phase the daemon heard begin: it holds the phase through the stop.
    if (!stopped && steady_clock::now() - begin >= seconds(1) && run.in_step()) {
      ASSERT_EQ(::kill(d->pid(), SIGSTOP), 0);
      stopped = true;
    }
    std::this_thread::sleep_for(milliseconds(76));
    run.phase_end("train");
    std::this_thread::sleep_for(milliseconds(20));
    if (stopped && !resumed && steady_clock::now() - begin >= seconds(4)) {
      ASSERT_EQ(::kill(d->pid(), SIGCONT), 0);
      resumed = true;
    }
  }
  ::kill(d->pid(), SIGCONT);  // whatever happened above
  ASSERT_TRUE(run.in_step());
  std::string said;
  for (const std::string& w : warnings) said += w + "\n";
  EXPECT_NE(said.find("ending phase train"), std::string::npos) << said;

  v1::Request request;
  request.mutable_report()->set_run_id(run.id());
  const v1::RunStatus report = d->call(request).report().run();
  int phases = 0;
  double longest = 0;
  for (const v1::PhaseStat& p : report.phases()) {
    if (p.phase() != "train" || p.duration_seconds() == 0) continue;
    ++phases;
    longest = std::max(longest, p.duration_seconds());
  }
  EXPECT_GE(phases, 20);
  // 76 ms each; slack for a loaded machine's sleeps, far below the 3 s stop.
  EXPECT_LT(longest, 0.6) << said;
  run.end();
}

}  // namespace
}  // namespace ramguard::testing
