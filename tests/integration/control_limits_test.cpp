// Limits of the control server: connections, request rate and active runs, each set small
// through the configuration, each answered with RESOURCE_EXHAUSTED naming the limit, and the
// daemon keeps serving within the limit.
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <vector>

#include "control_wire.hpp"
#include "harness.hpp"

namespace ramguard::testing {
namespace {

TEST(ControlLimits, ConnectionBeyondTheLimitIsToldWhyAndTheOthersAreServed) {
  auto d = Daemon::with_config("control:\n  max_connections: 2\n");
  auto first = std::make_unique<Wire>(d->socket_path());
  Wire second(d->socket_path());
  // Both are accepted and served (a reply proves the session is counted).
  ASSERT_TRUE(first->call(kHelloLine).has_hello());
  ASSERT_TRUE(second.call(kHelloLine).has_hello());

  Wire third(d->socket_path());
  const std::string raw = third.read_line();  // the daemon speaks first, then hangs up
  ASSERT_FALSE(raw.empty()) << "the refused connection got no reply";
  const v1::Reply refused = parse_reply(raw);
  EXPECT_EQ(refused.error().code(), v1::Error::RESOURCE_EXHAUSTED) << raw;
  EXPECT_NE(refused.error().message().find("too many connections (limit 2)"), std::string::npos)
      << raw;
  EXPECT_TRUE(third.read_line().empty()) << "the refused connection is closed";

  // The connections within the limit carry on; a slot freed is a slot usable again.
  EXPECT_TRUE(second.call(kHelloLine).has_hello());
  first.reset();
  EXPECT_TRUE(eventually(
      [&] {
        Wire again(d->socket_path());
        const std::string line = again.roundtrip(kHelloLine);
        return !line.empty() && parse_reply(line).has_hello();
      },
      5s));
}

TEST(ControlLimits, RequestRateAboveTheLimitIsRefusedPerConnection) {
  auto d = Daemon::with_config("control:\n  max_requests_per_second: 5\n");
  Wire wire(d->socket_path());
  constexpr int kBurst = 15;
  std::string burst;
  for (int i = 0; i < kBurst; ++i) {
    burst += R"({"version":1,"requestId":")" + std::to_string(i) + R"(","hello":{}})" + "\n";
  }
  wire.send(burst);
  int answered = 0, limited = 0;
  for (int i = 0; i < kBurst; ++i) {
    const v1::Reply reply = parse_reply(wire.read_line());
    EXPECT_EQ(reply.request_id(), std::to_string(i)) << "one reply per request, in order";
    if (reply.has_hello()) {
      ++answered;
      continue;
    }
    ++limited;
    EXPECT_EQ(reply.error().code(), v1::Error::RESOURCE_EXHAUSTED);
    EXPECT_NE(reply.error().message().find("request rate above 5 per second"), std::string::npos)
        << reply.error().message();
  }
  // A burst of one second's worth passes; the rest of an instant burst does not.
  EXPECT_GE(answered, 5);
  EXPECT_LT(answered, kBurst);
  EXPECT_EQ(answered + limited, kBurst);

  // Another connection has its own budget; this one recovers as its bucket refills.
  Wire other(d->socket_path());
  EXPECT_TRUE(other.call(kHelloLine).has_hello());
  EXPECT_TRUE(eventually([&] { return wire.call(kHelloLine).has_hello(); }, 5s, 250ms));
}

TEST(ControlLimits, ActiveRunsBeyondTheLimitAreRefusedUntilOneEnds) {
  auto d = Daemon::with_config("control:\n  max_runs: 1\n");
  MemChild first_child, second_child;
  v1::Request first;
  first.mutable_run_start()->set_pid(static_cast<std::uint32_t>(first_child.pid()));
  const v1::Reply started = d->call(first);
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();

  v1::Request second;
  second.mutable_run_start()->set_pid(static_cast<std::uint32_t>(second_child.pid()));
  const v1::Reply refused = d->call(second);
  ASSERT_TRUE(refused.has_error()) << refused.DebugString();
  EXPECT_EQ(refused.error().code(), v1::Error::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error().message().find("too many active runs (limit 1)"), std::string::npos)
      << refused.error().message();

  v1::Request end;
  end.mutable_run_end()->set_run_id(started.run_start().run_id());
  ASSERT_TRUE(d->call(end).has_run_end());
  const v1::Reply now = d->call(second);
  EXPECT_TRUE(now.has_run_start()) << now.DebugString();
}

// Ended runs stay in memory for the retention, but starting and ending runs in a loop cannot
// grow the daemon: past max_runs + a quarter (at least one), ended runs that are no longer
// sampled leave memory early (the ledger still answers for them), and when the ended runs
// still checking their release fill the room, a start is refused saying so.
TEST(ControlLimits, EndedRunsInMemoryAreBoundedAndTheLedgerStillAnswersForTheForgotten) {
  // A small release slack and a long grace: a run whose process still holds what it took
  // during the run stays undecided (and sampled) until its process exits.
  auto d = Daemon::with_config("control:\n  max_runs: 1\nrelease:\n  slack: 1MiB\n  grace: 10m\n");
  const auto start_run = [&](pid_t pid) {
    v1::Request start;
    start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
    return d->call(start);
  };
  const auto end_run = [&](const std::string& id) {
    v1::Request end;
    end.mutable_run_end()->set_run_id(id);
    ASSERT_TRUE(d->call(end).has_run_end());
  };
  // Runs whose process exits after the end: their release is decided, sampling stops.
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    MemChild child;
    const v1::Reply started = start_run(child.pid());
    ASSERT_TRUE(started.has_run_start()) << "run " << i << ": " << started.DebugString();
    ids.push_back(started.run_start().run_id());
    end_run(ids.back());
    child.kill(SIGTERM);
    child.wait();
    ASSERT_TRUE(eventually(
        [&] {
          v1::Request status;
          status.mutable_status()->set_run_id(ids.back());
          const v1::Reply r = d->call(status);
          return r.has_status() && r.status().runs_size() == 1 &&
                 r.status().runs(0).state() == "ended";
        },
        5s));
  }
  EXPECT_FALSE(d->wait_for_log("run.forgotten_early").empty());
  v1::Request first;
  first.mutable_status()->set_run_id(ids.front());
  const v1::Reply from_ledger = d->call(first);
  ASSERT_TRUE(from_ledger.has_status()) << from_ledger.DebugString();
  EXPECT_EQ(from_ledger.status().runs(0).run_id(), ids.front());

  // Ended runs still checking their release (their processes hold their memory) stay until
  // it is decided: with one active run's room (max_runs 1) and one more, the third is refused.
  MemChild a, b, c;
  const v1::Reply ra = start_run(a.pid());
  ASSERT_TRUE(ra.has_run_start()) << ra.DebugString();
  a.command("alloc held 33554432");
  end_run(ra.run_start().run_id());
  const v1::Reply rb = start_run(b.pid());
  ASSERT_TRUE(rb.has_run_start()) << rb.DebugString();
  b.command("alloc held 33554432");
  end_run(rb.run_start().run_id());
  const v1::Reply rc = start_run(c.pid());
  ASSERT_TRUE(rc.has_error()) << rc.DebugString();
  EXPECT_EQ(rc.error().code(), v1::Error::RESOURCE_EXHAUSTED);
  EXPECT_EQ(rc.error().message(),
            "too many runs in memory (limit 2): 2 ended runs are still checking their release; "
            "try again after release.grace");
}

}  // namespace
}  // namespace ramguard::testing
