// Ledger retention on a real SQLite file: by age, by run count and by the size cap, oldest
// finished runs first, never an active run.
#include "store/retention.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/store.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using testing::at_seconds;
using testing::open_store;
using testing::sample_ledger;
using testing::TempDir;

constexpr std::int64_t kDay = 86'400;

// A finished run that ended `ended_s` seconds after the fixtures' epoch.
void add_finished(Store& store, const std::string& id, std::int64_t ended_s) {
  ASSERT_TRUE(store.begin_run(sample_ledger(id)).ok());
  ASSERT_TRUE(store.end_run(id, RunState::kEnded, at_seconds(ended_s), 1, {}).ok());
}

bool present(Store& store, const std::string& id) {
  return store.load_run(id).ok();
}

TEST(Retention, DeletesFinishedRunsOlderThanMaxAgeAndKeepsActiveOnes) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  add_finished(*store, "old", 0);
  add_finished(*store, "recent", 89 * kDay);
  ASSERT_TRUE(store->begin_run(sample_ledger("active")).ok());  // started long ago, never ends

  RetentionConfig retention;  // defaults: 90 days, 10,000 runs, 1 GiB
  auto out = apply_retention(*store, retention, at_seconds(91 * kDay).wall);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->pruned_by_age, 1u);
  EXPECT_EQ(out->pruned(), 1u);
  EXPECT_EQ(out->runs_left, 2u);
  EXPECT_FALSE(present(*store, "old"));
  EXPECT_TRUE(present(*store, "recent"));
  EXPECT_TRUE(present(*store, "active"));
  // 0 turns a limit off.
  retention.max_age_days = 0;
  out = apply_retention(*store, retention, at_seconds(10'000 * kDay).wall);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->pruned(), 0u);
  EXPECT_TRUE(present(*store, "recent"));
}

TEST(Retention, KeepsAtMostMaxRunsDeletingTheEarliestEnded) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  // Ended out of start order: retention goes by the end time.
  add_finished(*store, "a", 30);
  add_finished(*store, "b", 10);
  add_finished(*store, "c", 20);
  add_finished(*store, "d", 40);
  ASSERT_TRUE(store->begin_run(sample_ledger("active")).ok());

  RetentionConfig retention;
  retention.max_runs = 3;
  auto out = apply_retention(*store, retention, at_seconds(50).wall);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->pruned_by_count, 2u);
  EXPECT_EQ(out->runs_left, 3u);
  EXPECT_FALSE(present(*store, "b"));
  EXPECT_FALSE(present(*store, "c"));
  EXPECT_TRUE(present(*store, "a"));
  EXPECT_TRUE(present(*store, "d"));
  EXPECT_TRUE(present(*store, "active"));

  // With only active runs over the cap, nothing can go.
  retention.max_runs = 1;
  out = apply_retention(*store, retention, at_seconds(50).wall);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->runs_left, 1u);
  EXPECT_TRUE(present(*store, "active"));
}

TEST(Retention, SizeCapDeletesOldestFinishedRunsUntilThePagesInUseFit) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  // 40 finished runs of ~100 KB of samples each: ~4 MB in use.
  for (int i = 0; i < 40; ++i) {
    const std::string id = "run" + std::to_string(i);
    add_finished(*store, id, 100 + i);
    std::vector<ProgressSample> samples;
    for (std::int64_t t = 0; t < 4000; ++t) samples.push_back({t, 1, 2, 3, 4, 5});
    ASSERT_TRUE(store->append_samples(id, samples).ok());
  }
  ASSERT_TRUE(store->begin_run(sample_ledger("active")).ok());
  auto before = store->used_bytes();
  ASSERT_TRUE(before.ok());
  ASSERT_GT(*before, 3u << 20) << "the fixture must be well above the cap";

  RetentionConfig retention;
  retention.max_bytes = 2u << 20;
  auto out = apply_retention(*store, retention, at_seconds(200).wall);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_LE(out->used_bytes, retention.max_bytes);
  EXPECT_GT(out->pruned_by_size, 10u);
  EXPECT_LT(out->pruned_by_size, 40u);
  auto used = store->used_bytes();
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(*used, out->used_bytes);
  // The oldest went, the newest stayed, the active run stayed.
  EXPECT_FALSE(present(*store, "run0"));
  EXPECT_TRUE(present(*store, "run39"));
  EXPECT_TRUE(present(*store, "active"));

  // Later runs: each pass brings the pages in use back under the cap.
  for (int i = 40; i < 50; ++i) {
    const std::string id = "run" + std::to_string(i);
    add_finished(*store, id, 100 + i);
    std::vector<ProgressSample> samples;
    for (std::int64_t t = 0; t < 4000; ++t) samples.push_back({t, 1, 2, 3, 4, 5});
    ASSERT_TRUE(store->append_samples(id, samples).ok());
    auto again = apply_retention(*store, retention, at_seconds(200).wall);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_LE(again->used_bytes, retention.max_bytes);
  }
  EXPECT_TRUE(present(*store, "run49"));
  EXPECT_TRUE(present(*store, "active"));
}

}  // namespace
}  // namespace ramguard
