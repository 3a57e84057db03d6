// The daemon-wide series as DaemonSeries keeps them from admission's decisions.
#include "metrics/daemon_series.hpp"

#include <gtest/gtest.h>

#include "unit/metrics/scrape.hpp"

namespace ramguard {
namespace {

using testkit::sample;

TEST(DaemonSeries, ADecisionSetsTheCapsAndCountsARefusalByTheCapThatRefused) {
  testkit::Parts parts;
  Decision admitted = testkit::admission(true, 1'000'000'000);
  admitted.effective_budget_bytes = 15'500'000'000;
  admitted.node_cap_bytes = 20'000'000'000;
  admitted.committed_bytes = 4'000'000'000;
  parts.daemon.observe_decision(admitted);
  auto s = parts.samples();
  EXPECT_EQ(sample(s, "ramguard_admission_cap_bytes", {{"cap", "effective"}}), 15.5e9);
  EXPECT_EQ(sample(s, "ramguard_admission_cap_bytes", {{"cap", "node"}}), 20e9);
  EXPECT_EQ(sample(s, "ramguard_admission_cap_bytes", {{"cap", "cgroup"}}), 0);  // none
  EXPECT_EQ(sample(s, "ramguard_admission_committed_bytes"), 4e9);
  EXPECT_FALSE(sample(s, "ramguard_admission_refusals_by_cap_total", {{"cap", "budget"}}));

  Decision refused = testkit::admission(false, -500'000'000);
  refused.effective_budget_bytes = 12'000'000'000;
  refused.cgroup_limit_bytes = 12'000'000'000;
  refused.binding_cap = BudgetCap::kCgroup;
  parts.daemon.observe_decision(refused);
  parts.daemon.observe_decision(refused);
  s = parts.samples();
  EXPECT_EQ(sample(s, "ramguard_admission_refusals_by_cap_total", {{"cap", "cgroup"}}), 2);
  EXPECT_EQ(sample(s, "ramguard_admission_cap_bytes", {{"cap", "node"}}), 0);  // none now
  EXPECT_EQ(sample(s, "ramguard_admission_cap_bytes", {{"cap", "cgroup"}}), 12e9);
}

}  // namespace
}  // namespace ramguard
