// Limits of the control server: connections, request rate and active runs, each set small
// through the configuration, each answered with RESOURCE_EXHAUSTED naming the limit, and the
// daemon keeps serving within the limit.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ramguard::testing
