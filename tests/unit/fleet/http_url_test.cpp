// The fleet endpoint's URL as the configuration gives it: plain http only, with clear errors.
#include "config/http_url.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ramguard {
namespace {

using ::testing::HasSubstr;

TEST(HttpUrl, HostPortAndPrefixAreSplit) {
  auto url = parse_http_url("http://prometheus.example:9090/thanos/");
  ASSERT_TRUE(url.ok()) << url.error().message;
  EXPECT_EQ(url->host, "prometheus.example");
  EXPECT_EQ(url->port, 9090);
  EXPECT_EQ(url->path_prefix, "/thanos");
  auto plain = parse_http_url("http://127.0.0.1");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->port, 80);
  EXPECT_EQ(plain->path_prefix, "");
  auto v6 = parse_http_url("http://[::1]:9090");
  ASSERT_TRUE(v6.ok()) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9090);
}

TEST(HttpUrl, BadUrlsNameTheProblem) {
  EXPECT_THAT(parse_http_url("https://p:9090").error().message,
              HasSubstr("https is not supported"));
  EXPECT_THAT(parse_http_url("p:9090").error().message, HasSubstr("does not start with http://"));
  EXPECT_THAT(parse_http_url("http://:9090").error().message, HasSubstr("names no host"));
  EXPECT_THAT(parse_http_url("http://p:0").error().message, HasSubstr("port must be a number"));
  EXPECT_THAT(parse_http_url("http://p:99999").error().message, HasSubstr("port must be"));
  EXPECT_THAT(parse_http_url("http://p:x").error().message, HasSubstr("port must be"));
  EXPECT_THAT(parse_http_url("http://user:pw@p").error().message, HasSubstr("no user info"));
  EXPECT_THAT(parse_http_url("http://p/api?x=1").error().message, HasSubstr("query"));
}

}  // namespace
}  // namespace ramguard
