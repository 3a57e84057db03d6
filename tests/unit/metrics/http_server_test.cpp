// The /metrics server stops at once: civetweb's master thread polls its listener for up to 2 s
// between looks at its stop flag, and the destructor knocks on the listener so that every
// daemon's exit (and every test that starts one) does not wait for that poll.
#include "metrics/http_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace ramguard {
namespace {

double seconds_to_stop(const std::string& spec) {
  auto server = MetricsHttpServer::start(
      spec, [](std::string& buffer, const MetricsHttpServer::Flush&) { buffer += "up 1\n"; });
  EXPECT_TRUE(server) << spec << ": " << server.error().message;
  if (!server) return 0;
  EXPECT_GT((*server)->port(), 0);
  // Long enough for civetweb's master thread to be inside its poll.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  server->reset();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Not a speed goal: the bound is far from the 0.01-0.1 s it takes and far below civetweb's 2 s.
TEST(MetricsHttpServer, StopsWithoutWaitingForCivetwebsPoll) {
  for (const std::string spec : {"127.0.0.1:0", "0.0.0.0:0"}) {
    EXPECT_LT(seconds_to_stop(spec), 1.0) << spec;
  }
}

}  // namespace
}  // namespace ramguard
