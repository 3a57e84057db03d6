// Each user's share as series: one per UID with a share, the smallest folded into "other" past
// the bound, and a user whose share went to 0 loses its series.
#include "metrics/user_shares.hpp"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

namespace ramguard {
namespace {

TEST(UserShares, TheLargestSharesKeepTheirUidAndTheRestAreSummedUnderOther) {
  std::map<std::uint32_t, std::uint64_t> by_uid;
  for (std::uint32_t uid = 1000; uid < 1100; ++uid) by_uid[uid] = uid;  // 100 users
  by_uid[0] = 5;                                                        // root holds little
  by_uid[7] = 0;                                                        // nothing: no series
  const auto labels = user_share_labels(by_uid, 32);
  ASSERT_EQ(labels.size(), 33u);
  EXPECT_EQ(labels.at("1099"), 1099.0);
  EXPECT_EQ(labels.at("1068"), 1068.0);  // the 32nd largest
  EXPECT_EQ(labels.count("1067"), 0u);
  EXPECT_EQ(labels.count("7"), 0u);
  // 1000..1067 and root's 5 are summed.
  EXPECT_EQ(labels.at("other"), (1000.0 + 1067.0) * 68 / 2 + 5);
}

TEST(UserShares, SeriesFollowTheSharesAndGoWhenAShareIsZero) {
  prometheus::Registry registry;
  auto& family = prometheus::BuildGauge().Name("ramguard_user_active_runs").Register(registry);
  UserShareSeries series(family);
  series.set({{0, 2}, {65534, 253}});
  const auto values = [&] {
    std::map<std::string, double> out;
    for (const auto& f : registry.Collect()) {
      for (const auto& m : f.metric) out[m.label.at(0).value] = m.gauge.value;
    }
    return out;
  };
  EXPECT_EQ(values(), (std::map<std::string, double>{{"0", 2}, {"65534", 253}}));
  series.set({{0, 3}, {65534, 0}});
  EXPECT_EQ(values(), (std::map<std::string, double>{{"0", 3}}));
  series.set({});
  EXPECT_TRUE(values().empty());
}

}  // namespace
}  // namespace ramguard
