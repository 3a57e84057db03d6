#include "metrics/listen_probe.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

TEST(ProbeListenError, EmptyForAFreePortAndTheErrnoTextOtherwise) {
  EXPECT_EQ(probe_listen_error(Endpoint{"127.0.0.1", 0}), "");
  EXPECT_EQ(probe_listen_error(Endpoint{"::1", 0}), "");
  // TEST-NET-1 (RFC 5737): never assigned to a local interface.
  EXPECT_NE(probe_listen_error(Endpoint{"192.0.2.1", 0}).find("assign"), std::string::npos);
}

}  // namespace
}  // namespace ramguard
