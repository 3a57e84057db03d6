// TargetSeries::find goes through its own index over the map's nodes: it must find exactly the
// live targets through every kind of insertion and removal (new target, fold into "other",
// eviction of a retired one, sweep, remove). And one user's targets stay within its cap.
#include "metrics/target_series.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace ramguard {
namespace {

using std::chrono::seconds;

Labels labels_of(const std::string& key) {
  return {{kJobLabel, key}, {kRunLabel, key}};
}

// Every key of `live` is found at its state; every key of `gone` is not found.
void expect_index(TargetSeries& series, const std::map<std::string, TargetState*>& live,
                  const std::vector<std::string>& gone) {
  for (const auto& [key, state] : live) EXPECT_EQ(series.find(key), state) << key;
  for (const std::string& key : gone) EXPECT_EQ(series.find(key), nullptr) << key;
}

TEST(TargetSeriesIndex, FindsExactlyTheLiveTargetsThroughAddsSweepsAndRemoves) {
  TargetSeries series(5000);
  std::map<std::string, TargetState*> live;
  for (int i = 0; i < 3000; ++i) {
    const std::string key = "pid-" + std::to_string(i);
    live[key] = &series.target(key, labels_of(key));
  }
  expect_index(series, live, {"pid-3000", "", "pid-"});

  std::vector<std::string> gone;
  for (int i = 0; i < 3000; i += 3) {  // a third retired, then swept
    const std::string key = "pid-" + std::to_string(i);
    series.retire(key, seconds(10));
    gone.push_back(key);
    live.erase(key);
  }
  EXPECT_EQ(series.sweep(seconds(100), seconds(60)), 1000u);
  for (int i = 1; i < 3000; i += 3) {  // another third removed at once
    const std::string key = "pid-" + std::to_string(i);
    series.remove(key);
    gone.push_back(key);
    live.erase(key);
  }
  expect_index(series, live, gone);
  EXPECT_EQ(series.target_count(), live.size());
}

TEST(TargetSeriesIndex, FoldedAndEvictedTargetsAreFoundWhereTheyLive) {
  TargetSeries series(2);
  TargetState& a = series.target("a", labels_of("a"));
  TargetState& b = series.target("b", labels_of("b"));
  TargetState& folded = series.target("c", labels_of("c"));  // past the bound: "other"
  EXPECT_EQ(series.find("other"), &folded);
  EXPECT_EQ(series.find("c"), nullptr);
  EXPECT_EQ(series.find("a"), &a);
  series.retire("a", seconds(1));
  TargetState& d = series.target("d", labels_of("d"));  // evicts retired "a"
  EXPECT_EQ(series.find("a"), nullptr);
  EXPECT_EQ(series.find("b"), &b);
  EXPECT_EQ(series.find("d"), &d);
  EXPECT_EQ(series.find("other"), &folded);
}

TEST(TargetSeriesOwners, OneUsersTargetsPastItsCapFoldWhileRootsAndOthersKeepTheirOwn) {
  TargetSeries series(1024);
  series.set_max_targets_per_user(3);
  for (int i = 0; i < 1100; ++i) {  // a flood of throwaway admissions by uid 65534
    const std::string key = "admission:junk-" + std::to_string(i);
    series.target(key, {{kJobLabel, key}}, 65534);
  }
  EXPECT_EQ(series.live_targets_of(65534), 3u);
  EXPECT_EQ(series.folded_count(), 1097u);
  EXPECT_EQ(series.target_count(), 4u) << "three of its own and the shared \"other\"";
  // Root's run and another user's run still get series of their own.
  TargetState& root_run = series.target("r-root", labels_of("r-root"), 0);
  EXPECT_EQ(series.find("r-root"), &root_run);
  EXPECT_EQ(root_run.labels.at(kRunLabel), "r-root");
  TargetState& other_user = series.target("r-1001", labels_of("r-1001"), 1001);
  EXPECT_EQ(series.find("r-1001"), &other_user);
  EXPECT_EQ(series.live_targets_of(1001), 1u);
  EXPECT_EQ(series.live_targets_of(0), 0u) << "root is never counted";

  // A retired target frees its owner's slot; reviving it takes the slot back.
  series.retire("admission:junk-0", seconds(1));
  EXPECT_EQ(series.live_targets_of(65534), 2u);
  TargetState& next = series.target("admission:junk-2000", {{kJobLabel, "junk-2000"}}, 65534);
  EXPECT_EQ(series.find("admission:junk-2000"), &next);
  EXPECT_EQ(series.live_targets_of(65534), 3u);
  series.remove("admission:junk-1");
  EXPECT_EQ(series.live_targets_of(65534), 2u);

  // Without a cap (0) one user may take every slot, as before.
  series.set_max_targets_per_user(0);
  series.target("admission:junk-3000", {{kJobLabel, "junk-3000"}}, 65534);
  EXPECT_NE(series.find("admission:junk-3000"), nullptr);
}

}  // namespace
}  // namespace ramguard
