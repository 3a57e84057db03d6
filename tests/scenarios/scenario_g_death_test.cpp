// Scenario G (README.md): the coordinator dies (SIGKILL) during aggregation. The run ends
// `exited` at once, with a verdict naming the last phase and the last reading, and its
// reservation is released. The signal is asserted where the kernel tells it (the target is
// ramguardd's own child); for a foreign process the test records what the daemon says.
#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <iostream>

#include "adopted_child.hpp"
#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr ScenarioScale gib{64};

ScaledThresholds thresholds() {
  return gib.thresholds(16);
}

v1::Reply call_ok(const std::function<v1::Reply(const v1::Request&)>& call, v1::Request req) {
  v1::Reply reply = call(req);
  if (reply.has_error()) ADD_FAILURE() << reply.error().message();
  return reply;
}

struct Death {
  v1::RunStatus run;
  v1::StatusReply status;
  double seconds_to_exited = 0;
  std::uint64_t rss_at_kill = 0;  // as the child itself read it: level + updates + its own code
};

// Admits, starts a run on `pid` claiming the reservation, enters aggregation holding 4 GiB
// (scaled) over a 2.5 GiB level, then SIGKILLs the coordinator and polls status until the run
// is no longer active.
Death kill_during_aggregation(const std::function<v1::Reply(const v1::Request&)>& call, pid_t pid,
                              const std::function<std::uint64_t(const std::string&)>& command,
                              const std::function<void()>& kill9) {
  command("alloc level " + std::to_string(gib(2.5)));
  v1::Request admit;
  admit.mutable_admit()->set_job("scenario-g");
  admit.mutable_admit()->set_estimate_bytes(gib(8));
  admit.mutable_admit()->set_pid(static_cast<std::uint32_t>(pid));
  const v1::AdmitReply admitted = call_ok(call, admit).admit();
  EXPECT_TRUE(admitted.admitted()) << admitted.reason();

  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  start.mutable_run_start()->set_job("scenario-g");
  start.mutable_run_start()->set_model_bytes(gib(1));
  start.mutable_run_start()->set_reservation_id(admitted.reservation_id());
  const std::string run_id = call_ok(call, start).run_start().run_id();

  Death out;
  auto mark = [&](v1::MarkRequest::Kind kind, const std::string& phase) {
    v1::Request m;
    m.mutable_mark()->set_run_id(run_id);
    m.mutable_mark()->set_kind(kind);
    m.mutable_mark()->set_phase(phase);
    call_ok(call, m);
  };
  mark(v1::MarkRequest::PHASE_BEGIN, "load");
  mark(v1::MarkRequest::PHASE_END, "load");
  mark(v1::MarkRequest::ROUND_END, "");
  mark(v1::MarkRequest::PHASE_BEGIN, "aggregation");
  out.rss_at_kill = command("alloc updates " + std::to_string(gib(4)));
  {
    v1::Request st;
    st.mutable_status();
    // The periodic sampler has seen the 6.5 GiB (scaled) of the aggregation.
    EXPECT_TRUE(eventually(
        [&] { return call(st).status().runs(0).last().rss_bytes() + (1 << 20) >= out.rss_at_kill; },
        5s));
    EXPECT_EQ(call(st).status().reservations_size(), 1);
  }

  const auto killed_at = std::chrono::steady_clock::now();
  kill9();
  v1::Request st;
  st.mutable_status()->set_run_id(run_id);
  const bool ended = eventually(
      [&] {
        out.run = call(st).status().runs(0);
        return out.run.state() != "active";
      },
      5s, 5ms);
  out.seconds_to_exited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_TRUE(ended) << "run still active 5 s after SIGKILL";
  v1::Request all;
  all.mutable_status();
  out.status = call(all).status();
  return out;
}

void expect_exited_verdict(const Death& d) {
  SCOPED_TRACE(verdict_text(d.run));
  EXPECT_EQ(d.run.state(), "exited");
  EXPECT_LT(d.seconds_to_exited, 1.0);  // the pidfd fires within a millisecond
  const auto exited = verdicts_of(d.run, "exited");
  ASSERT_EQ(exited.size(), 1u);
  const v1::Verdict& v = exited[0];
  EXPECT_EQ(v.severity(), v1::CRITICAL);
  EXPECT_EQ(v.phase(), "aggregation");
  EXPECT_EQ(v.round(), 2u);
  EXPECT_NE(v.summary().find("during aggregation"), std::string::npos) << v.summary();
  EXPECT_NEAR(figure(v, "last_rss_bytes"), static_cast<double>(d.rss_at_kill), 1 << 20);
  EXPECT_NEAR(figure(v, "last_rss_copies"),
              static_cast<double>(d.rss_at_kill) / static_cast<double>(gib(1)), 0.1);
  EXPECT_GE(figure(v, "last_rss_bytes"), static_cast<double>(gib(6.5)));
  EXPECT_EQ(d.status.reservations_size(), 0);
  EXPECT_EQ(d.status.reserved_bytes(), 0u);
  EXPECT_EQ(d.run.reservation_bytes(), 0u);
}

TEST(ScenarioG, SignalNamedWhenTheCoordinatorIsTheDaemonsChild) {
  AdoptedChild adopted(scenario_config(thresholds()));
  const Death d = kill_during_aggregation([&](const v1::Request& r) { return adopted.call(r); },
                                          adopted.child_pid(),
                                          [&](const std::string& c) { return adopted.command(c); },
                                          [&] { ::kill(adopted.child_pid(), SIGKILL); });
  expect_exited_verdict(d);
  const auto exited = verdicts_of(d.run, "exited");
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(figure(exited[0], "signal"), SIGKILL);
  EXPECT_NE(exited[0].summary().find("signal 9 (SIGKILL)"), std::string::npos)
      << exited[0].summary();
}

TEST(ScenarioG, ForeignCoordinatorEndsExitedAtOnce) {
  auto daemon = start_scenario_daemon(thresholds());
  MemChild child;
  const Death d = kill_during_aggregation(
      [&](const v1::Request& r) { return daemon->call(r); }, child.pid(),
      [&](const std::string& c) { return child.command(c); }, [&] { child.kill(SIGKILL); });
  expect_exited_verdict(d);
  // Not ramguardd's child: whether the signal can be named depends on the kernel interface the
  // daemon uses. Recorded for the report, not asserted.
  const auto exited = verdicts_of(d.run, "exited");
  if (!exited.empty()) {
    std::cout << "[ foreign exit ] " << exited[0].summary() << "\n";
    RecordProperty("foreign_exit_summary", exited[0].summary());
  }
  child.wait();
}

}  // namespace
}  // namespace ramguard::testing
