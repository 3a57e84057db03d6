// TargetSeries::find goes through its own index over the map's nodes: it must find exactly the
// live targets through every kind of insertion and removal (new target, fold into "other",
// eviction of a retired one, sweep, remove).
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

}  // namespace
}  // namespace ramguard
