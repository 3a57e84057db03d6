// Queries across runs: listings, label filters and a job's peak on record.
#include <gtest/gtest.h>

#include "store/store.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using testing::open_store;
using testing::TempDir;

std::vector<std::string> ids(const std::vector<RunSummary>& runs) {
  std::vector<std::string> out;
  for (const auto& r : runs) out.push_back(r.info.run_id);
  return out;
}

// Runs started one second apart, "a" first.
void add_run(Store& store, const std::string& id, std::int64_t start_s,
             std::map<std::string, std::string> labels, const std::string& job = "vit") {
  RunLedger l = testing::sample_ledger(id, job);
  l.started = testing::at_seconds(start_s);
  l.info.labels = std::move(labels);
  auto s = store.begin_run(l);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

TEST(StoreQuery, ListRunsNamesEachRunsScope) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  add_run(*store, "p", 1, {});
  RunLedger tree = testing::sample_ledger("t", "vit");
  tree.started = testing::at_seconds(2);
  tree.info.scope = Scope::kTree;
  ASSERT_TRUE(store->begin_run(tree).ok());
  auto all = store->list_runs(10);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(ids(*all), (std::vector<std::string>{"t", "p"}));
  EXPECT_EQ((*all)[0].info.scope, Scope::kTree);  // `ramguard runs --json` said "process" here
  EXPECT_EQ((*all)[1].info.scope, Scope::kProcess);
}

TEST(StoreQuery, ListRunsMostRecentFirstWithWorstVerdict) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  add_run(*store, "a", 1, {});
  add_run(*store, "b", 2, {});
  add_run(*store, "c", 3, {{"build", "final"}});
  ASSERT_TRUE(store->append_mark("b", testing::mark(1, MarkKind::kRunStart, "", 0)).ok());
  ASSERT_TRUE(store->append_mark("b", testing::mark(2, MarkKind::kRoundEnd, "", 1)).ok());
  Verdict info{verdict_kind::kRelease, Severity::kInfo, true, 0, "", "released", {}, {}, false};
  Verdict leak{verdict_kind::kLeak, Severity::kCritical,    false, 4, "", "leak",
               {{"x", 1}},          testing::at_seconds(9), false};
  Verdict cleared{verdict_kind::kGrowthWarning,
                  Severity::kCritical,
                  false,
                  2,
                  "",
                  "cleared",
                  {},
                  testing::at_seconds(5),
                  true};
  ASSERT_TRUE(store->save_verdict("b", info).ok());
  ASSERT_TRUE(store->save_verdict("b", cleared).ok());
  ASSERT_TRUE(store->save_verdict("b", leak).ok());
  ASSERT_TRUE(store->save_verdict("a", info).ok());

  auto all = store->list_runs(10);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(ids(*all), (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_EQ((*all)[0].info.labels.at("build"), "final");
  EXPECT_EQ((*all)[1].mark_count, 2u);
  ASSERT_TRUE((*all)[1].worst_verdict.has_value());
  EXPECT_EQ((*all)[1].worst_verdict->kind, verdict_kind::kLeak);
  EXPECT_EQ((*all)[1].worst_verdict->figures.at("x"), 1.0);
  ASSERT_TRUE((*all)[2].worst_verdict.has_value());
  EXPECT_EQ((*all)[2].worst_verdict->kind, verdict_kind::kRelease);
  EXPECT_FALSE((*all)[0].worst_verdict.has_value());

  auto two = store->list_runs(2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(ids(*two), (std::vector<std::string>{"c", "b"}));
}

// The listing's SQL follows ramguard/base/verdict_rank.hpp: at equal severity and outcome the kind
// decides (the process died before over budget), not which was saved last.
TEST(StoreQuery, WorstVerdictFollowsTheSharedOrder) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  add_run(*store, "r", 1, {});
  Verdict exited{verdict_kind::kExited,
                 Severity::kCritical,
                 false,
                 3,
                 "",
                 "exited",
                 {},
                 testing::at_seconds(5),
                 false};
  Verdict over{verdict_kind::kOverBudget,
               Severity::kCritical,
               false,
               3,
               "",
               "over budget",
               {},
               testing::at_seconds(6),
               false};
  ASSERT_TRUE(store->save_verdict("r", exited).ok());
  ASSERT_TRUE(store->save_verdict("r", over).ok());
  auto all = store->list_runs(10);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 1u);
  ASSERT_TRUE((*all)[0].worst_verdict.has_value());
  EXPECT_EQ((*all)[0].worst_verdict->kind, verdict_kind::kExited);
}

TEST(StoreQuery, FindRunsByLabelsNeedsEveryLabel) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  add_run(*store, "baseline", 1, {{"build", "baseline"}, {"model", "vit-h"}});
  add_run(*store, "final-1", 2, {{"build", "final"}, {"model", "vit-h"}});
  add_run(*store, "final-2", 3, {{"build", "final"}, {"model", "vit-b"}});
  add_run(*store, "unlabelled", 4, {});

  auto finals = store->find_runs_by_labels({{"build", "final"}});
  ASSERT_TRUE(finals.ok()) << finals.error().message;
  EXPECT_EQ(ids(*finals), (std::vector<std::string>{"final-2", "final-1"}));

  auto both = store->find_runs_by_labels({{"build", "final"}, {"model", "vit-h"}});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(ids(*both), (std::vector<std::string>{"final-1"}));

  auto vit_h = store->find_runs_by_labels({{"model", "vit-h"}});
  ASSERT_TRUE(vit_h.ok());
  EXPECT_EQ(ids(*vit_h), (std::vector<std::string>{"final-1", "baseline"}));

  auto none = store->find_runs_by_labels({{"build", "nonexistent"}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // A value must match its own key, not any key.
  auto crossed = store->find_runs_by_labels({{"model", "final"}});
  ASSERT_TRUE(crossed.ok());
  EXPECT_TRUE(crossed->empty());

  auto all = store->find_runs_by_labels({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 4u);
}

TEST(StoreQuery, JobPeakOnRecordIsTheLargestOfRecentEndedRuns) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  struct Run {
    std::string id;
    std::string job;
    RunState state;
    std::uint64_t peak;
    std::int64_t end_s;
  };
  const std::vector<Run> runs = {
      {"vit-1", "vit", RunState::kEnded, 8'000'000'000, 10},
      {"vit-2", "vit", RunState::kEnded, 12'000'000'000, 20},
      {"vit-3", "vit", RunState::kEnded, 9'000'000'000, 30},
      {"vit-oom", "vit", RunState::kExited, 20'000'000'000, 40},  // died early: not a measure
      {"vit-lost", "vit", RunState::kLost, 25'000'000'000, 50},
      {"bert-1", "bert", RunState::kEnded, 30'000'000'000, 60},
  };
  std::int64_t start = 0;
  for (const Run& r : runs) {
    add_run(*store, r.id, start++, {}, r.job);
    ASSERT_TRUE(store->end_run(r.id, r.state, testing::at_seconds(r.end_s), r.peak, {}, true).ok());
  }
  add_run(*store, "vit-active", 99, {}, "vit");
  ASSERT_TRUE(store->update_progress("vit-active", 50'000'000'000, true, {}).ok());

  auto peak = store->job_peak_on_record("vit");
  ASSERT_TRUE(peak.ok()) << peak.error().message;
  ASSERT_TRUE(peak->has_value());
  EXPECT_EQ((*peak)->run_id, "vit-2");
  EXPECT_EQ((*peak)->peak_bytes, 12'000'000'000u);
  EXPECT_TRUE((*peak)->peak_exact);
  EXPECT_EQ((*peak)->estimate_bytes, 11'100'000'000u);
  EXPECT_EQ((*peak)->plan, "fedavg");
  testing::expect_same((*peak)->ended, testing::at_seconds(20), "ended");

  // Only the most recent ended run counts when asked for one.
  auto latest = store->job_peak_on_record("vit", 1);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->run_id, "vit-3");

  auto unknown = store->job_peak_on_record("never-ran");
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->has_value());
}

// Calibration counts only the runs of the UIDs it is given: another user's tiny run under the
// same job name is not the job's peak for them, and each set of owners has its own cached answer.
TEST(StoreQuery, JobPeakOnRecordCountsOnlyTheGivenOwnersRuns) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  const std::pair<const char*, std::uint32_t> runs[] = {
      {"vit-root", 0}, {"vit-mine", 1000}, {"vit-theirs", 2000}};
  const std::uint64_t peaks[] = {9'000'000'000, 7'000'000'000, 20'000'000'000};
  for (std::size_t i = 0; i < 3; ++i) {
    RunLedger l = testing::sample_ledger(runs[i].first, "vit");
    l.started = testing::at_seconds(static_cast<std::int64_t>(i));
    l.info.owner_uid = runs[i].second;
    ASSERT_TRUE(store->begin_run(l).ok());
    ASSERT_TRUE(store
                    ->end_run(runs[i].first, RunState::kEnded,
                              testing::at_seconds(10 + static_cast<std::int64_t>(i)), peaks[i], {},
                              true)
                    .ok());
  }
  auto anyone = store->job_peak_on_record("vit");
  ASSERT_TRUE(anyone.ok() && anyone->has_value());
  EXPECT_EQ((*anyone)->run_id, "vit-theirs");
  auto mine = store->job_peak_on_record("vit", kRecentRunsForPeak, {1000});
  ASSERT_TRUE(mine.ok() && mine->has_value()) << (mine.ok() ? "" : mine.error().message);
  EXPECT_EQ((*mine)->run_id, "vit-mine");
  auto trusted = store->job_peak_on_record("vit", kRecentRunsForPeak, {0, 1000});
  ASSERT_TRUE(trusted.ok() && trusted->has_value());
  EXPECT_EQ((*trusted)->run_id, "vit-root");
  auto stranger = store->job_peak_on_record("vit", kRecentRunsForPeak, {3000});
  ASSERT_TRUE(stranger.ok());
  EXPECT_FALSE(stranger->has_value());
  // Asked again, from the cache: the same answers per set of owners.
  EXPECT_EQ((*store->job_peak_on_record("vit", kRecentRunsForPeak, {1000}))->run_id, "vit-mine");
  EXPECT_EQ((*store->job_peak_on_record("vit"))->run_id, "vit-theirs");
}

// Admissions ask for the peak on record every time, so the store keeps the answer: a run that
// ends, or a prune, must show in the next answer.
TEST(StoreQuery, JobPeakOnRecordFollowsRunsThatEndAndPrunes) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  EXPECT_FALSE(store->job_peak_on_record("vit")->has_value());
  add_run(*store, "vit-1", 0, {}, "vit");
  ASSERT_TRUE(
      store->end_run("vit-1", RunState::kEnded, testing::at_seconds(10), 8'000'000'000, {}, true)
          .ok());
  auto first = store->job_peak_on_record("vit");
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->peak_bytes, 8'000'000'000u);
  EXPECT_EQ((*store->job_peak_on_record("vit"))->run_id, "vit-1");  // asked again: same

  add_run(*store, "vit-2", 1, {}, "vit");
  ASSERT_TRUE(
      store->end_run("vit-2", RunState::kEnded, testing::at_seconds(20), 9'000'000'000, {}, true)
          .ok());
  auto second = store->job_peak_on_record("vit");
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->run_id, "vit-2");

  auto pruned = store->prune_oldest_runs(2);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(*pruned, 2u);
  auto none = store->job_peak_on_record("vit");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace ramguard
