#include "metrics/listen_address.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

TEST(ParseListenAddress, AcceptsNumericHostsAndLocalhost) {
  struct Case {
    std::string text, host, spec;
    std::uint16_t port;
  };
  const Case cases[] = {
      {"127.0.0.1:9464", "127.0.0.1", "127.0.0.1:9464", 9464},
      {"0.0.0.0:0", "0.0.0.0", "0.0.0.0:0", 0},
      {"localhost:65535", "127.0.0.1", "127.0.0.1:65535", 65535},
      {":9464", "127.0.0.1", "127.0.0.1:9464", 9464},
      {"[::1]:80", "::1", "[::1]:80", 80},
  };
  for (const auto& c : cases) {
    auto address = parse_listen_address(c.text);
    ASSERT_TRUE(address.ok()) << c.text << ": " << address.error().message;
    EXPECT_EQ(address->host, c.host);
    EXPECT_EQ(address->port, c.port);
    EXPECT_EQ(address->civetweb_spec(), c.spec);
  }
}

TEST(ParseListenAddress, RejectsWithTheReason) {
  struct Case {
    std::string text, reason;
  };
  const Case cases[] = {
      {"9464", "expected HOST:PORT"},
      {"127.0.0.1:65536", "0 to 65535"},
      {"127.0.0.1:-1", "0 to 65535"},
      {"127.0.0.1:", "0 to 65535"},
      {"host.example:80", "not a numeric IPv4"},
      {"256.1.1.1:80", "not a numeric IPv4"},
      {"[::g]:80", "not a numeric IPv6"},
      {"::1:80", "not a numeric IPv4"},  // IPv6 needs brackets
  };
  for (const auto& c : cases) {
    auto address = parse_listen_address(c.text);
    ASSERT_FALSE(address.ok()) << c.text;
    EXPECT_NE(address.error().message.find(c.reason), std::string::npos)
        << c.text << ": " << address.error().message;
    EXPECT_NE(address.error().message.find("'" + c.text + "'"), std::string::npos);
  }
}

TEST(ProbeListenError, EmptyForAFreePortAndTheErrnoTextOtherwise) {
  auto free_port = parse_listen_address("127.0.0.1:0");
  ASSERT_TRUE(free_port.ok());
  EXPECT_EQ(probe_listen_error(*free_port), "");
  auto foreign = parse_listen_address("192.0.2.1:0");
  ASSERT_TRUE(foreign.ok());
  EXPECT_NE(probe_listen_error(*foreign).find("assign"), std::string::npos);
}

}  // namespace
}  // namespace ramguard
