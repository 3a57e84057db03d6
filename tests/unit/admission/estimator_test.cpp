// Estimates from memory plans: the largest live sum over phases, with exact byte arithmetic.
#include "admission/estimator.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "verdicts/release.hpp"

namespace ramguard {
namespace {

constexpr std::uint64_t kGB = 1'000'000'000;

// The default fedavg plan (config/config.cpp).
MemoryPlan fedavg() {
  MemoryPlan plan;
  plan.name = "fedavg";
  plan.overhead_bytes = 1'100'000'000;
  plan.phases = {
      {"load", {{"global", 1, false}, {"staging", 1, false}}},
      {"aggregation", {{"global", 1, false}, {"host_updates", 1, true}, {"result", 1, false}}},
      {"synchronization", {{"global", 1, false}, {"outbound", 1, false}}},
      {"save", {{"global", 1, false}, {"serialized", 1, false}}},
  };
  return plan;
}

TEST(Estimator, DesignExampleIsAggregationAt11Point1GB) {
  Result<Estimate> e = estimate_from_plan(fedavg(), 2'500'000'000, 2);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->bytes, 11'100'000'000u);  // 4 x 2.5 + 1.1
  EXPECT_EQ(e->phase, "aggregation");
  EXPECT_EQ(e->plan, "fedavg");
  ASSERT_EQ(e->breakdown.size(), 3u);
  EXPECT_EQ(e->breakdown[1].state, "host_updates");
  EXPECT_DOUBLE_EQ(e->breakdown[1].copies, 2.0);  // per host x 2 hosts
  EXPECT_EQ(e->breakdown[1].bytes, 5 * kGB);
  EXPECT_EQ(describe_estimate(*e),
            "plan fedavg, aggregation dominates: global 1 x 2.50 GB + host_updates 2 x 2.50 GB + "
            "result 1 x 2.50 GB + overhead 1.10 GB = 11.10 GB");
}

TEST(Estimator, GlibcAddsWhatItKeepsToTheLargestLiveSumAndNamesTheRemedy) {
  Result<Estimate> plain = estimate_from_plan(fedavg(), 2'500'000'000, 2);
  Result<Estimate> glibc = estimate_from_plan(fedavg(), 2'500'000'000, 2, "glibc");
  ASSERT_TRUE(plain.ok() && glibc.ok());
  const auto retained =
      static_cast<std::uint64_t>(std::round(kGlibcRetainedModelCopies * 2'500'000'000.0));
  ASSERT_GT(retained, 0u);
  EXPECT_EQ(glibc->allocator_bytes, retained);
  EXPECT_DOUBLE_EQ(glibc->allocator_copies, kGlibcRetainedModelCopies);
  EXPECT_EQ(glibc->bytes, plain->bytes + retained);
  EXPECT_EQ(glibc->phase, "aggregation");  // it stays under every phase: the largest one leads
  const std::string text = describe_estimate(*glibc);
  EXPECT_THAT(text, ::testing::HasSubstr("result 1 x 2.50 GB + allocator "));
  EXPECT_THAT(text, ::testing::HasSubstr("; allocator: glibc malloc keeps ~"));
  // The one remedy text, as the release verdict words it.
  EXPECT_THAT(text, ::testing::EndsWith("; remedy: " + allocator_remedy("glibc")));
  EXPECT_THAT(text, ::testing::HasSubstr("MALLOC_ARENA_MAX=1"));
}

TEST(Estimator, JemallocAndAnUnreportedAllocatorGetNoTerm) {
  Result<Estimate> plain = estimate_from_plan(fedavg(), kGB, 2);
  ASSERT_TRUE(plain.ok());
  for (const char* allocator : {"jemalloc", "", "tcmalloc"}) {
    Result<Estimate> e = estimate_from_plan(fedavg(), kGB, 2, allocator);
    ASSERT_TRUE(e.ok()) << allocator;
    EXPECT_EQ(e->bytes, plain->bytes) << allocator;
    EXPECT_EQ(e->allocator_bytes, 0u) << allocator;
    EXPECT_EQ(describe_estimate(*e), describe_estimate(*plain)) << allocator;
  }
  EXPECT_EQ(allocator_retained_copies("jemalloc"), 0.0);
  EXPECT_EQ(allocator_retained_copies("glibc"), kGlibcRetainedModelCopies);
}

TEST(Estimator, TheAllocatorTermOverflowingIsAnError) {
  MemoryPlan plan{"big", {{"p", {{"a", 1, false}}}}, 0};
  const std::uint64_t model = std::numeric_limits<std::uint64_t>::max() / 4 * 3;
  ASSERT_TRUE(estimate_from_plan(plan, model, 1).ok());
  Result<Estimate> e = estimate_from_plan(plan, model, 1, "glibc");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.error().message, ::testing::HasSubstr("allocator term overflows 64 bits"));
}

TEST(Estimator, HostCountMovesTheDominatingPhase) {
  // Load needs 5 copies. One host: aggregation has 3, load dominates. Eight hosts:
  // aggregation has 10 and dominates.
  MemoryPlan plan = fedavg();
  plan.phases[0].states.push_back({"decompress", 3, false});
  Result<Estimate> one = estimate_from_plan(plan, kGB, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->phase, "load");
  EXPECT_EQ(one->bytes, 5 * kGB + plan.overhead_bytes);
  Result<Estimate> eight = estimate_from_plan(plan, kGB, 8);
  ASSERT_TRUE(eight.ok());
  EXPECT_EQ(eight->phase, "aggregation");
  EXPECT_EQ(eight->bytes, 10 * kGB + plan.overhead_bytes);
}

TEST(Estimator, LargestLiveSumIsNotTheSumOfPerPhaseMaxima) {
  // Each state peaks in a different phase: a = 3 in p1, b = 3 in p2. Per-state maxima sum to 6
  // copies; no phase has more than 4 alive at once.
  MemoryPlan plan;
  plan.name = "staggered";
  plan.phases = {{"p1", {{"a", 3, false}, {"b", 1, false}}},
                 {"p2", {{"a", 1, false}, {"b", 3, false}}},
                 {"p3", {{"a", 2, false}}}};
  Result<Estimate> e = estimate_from_plan(plan, kGB, 1);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bytes, 4 * kGB);
  EXPECT_NE(e->bytes, 6 * kGB);
  EXPECT_EQ(e->phase, "p1");  // first on a tie
}

TEST(Estimator, FractionalCopiesRoundToBytes) {
  MemoryPlan plan{"half", {{"load", {{"fp16", 0.5, false}}}}, 0};
  Result<Estimate> e = estimate_from_plan(plan, 3, 1);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bytes, 2u);  // 1.5 rounds to 2
}

TEST(Estimator, Errors) {
  MemoryPlan empty{"nothing", {}, kGB};
  Result<Estimate> e = estimate_from_plan(empty, kGB, 1);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("plan 'nothing' has no phases"), std::string::npos);

  Result<Estimate> zero_hosts = estimate_from_plan(fedavg(), kGB, 0);
  ASSERT_FALSE(zero_hosts.ok());
  EXPECT_NE(zero_hosts.error().message.find("phase 'aggregation' state 'host_updates' is per host"),
            std::string::npos)
      << zero_hosts.error().message;

  Result<Estimate> zero_model = estimate_from_plan(fedavg(), 0, 2);
  ASSERT_FALSE(zero_model.ok());
  EXPECT_NE(zero_model.error().message.find("model size is 0"), std::string::npos);

  MemoryPlan negative{"neg", {{"load", {{"w", -1, false}}}}, 0};
  Result<Estimate> neg = estimate_from_plan(negative, kGB, 1);
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.error().message.find("copies must be a finite number >= 0, got -1"),
            std::string::npos);

  MemoryPlan nan_plan{"nan", {{"load", {{"w", std::nan(""), false}}}}, 0};
  EXPECT_FALSE(estimate_from_plan(nan_plan, kGB, 1).ok());

  MemoryPlan huge{"huge", {{"load", {{"w", 1e6, true}}}}, 0};
  Result<Estimate> overflow = estimate_from_plan(huge, 1'000'000'000'000, 1000);
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.error().message.find("overflow"), std::string::npos);

  // The sum of fitting terms plus the overhead can overflow too.
  MemoryPlan sum{"sum", {{"load", {{"a", 1, false}, {"b", 1, false}}}}, 0};
  EXPECT_FALSE(estimate_from_plan(sum, std::numeric_limits<std::uint64_t>::max() / 2 + 1, 1).ok());
}

TEST(Estimator, ZeroHostsIsFineWithoutPerHostStates) {
  MemoryPlan plan{"single", {{"load", {{"w", 2, false}}}}, 100};
  Result<Estimate> e = estimate_from_plan(plan, 1000, 0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bytes, 2100u);
}

TEST(ModelBytes, FromEitherForm) {
  Result<std::uint64_t> direct = model_bytes_from(0, 0, 2'500'000'000);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(*direct, 2'500'000'000u);
  Result<std::uint64_t> product = model_bytes_from(632'000'000, 4, 0);
  ASSERT_TRUE(product.ok());
  EXPECT_EQ(*product, 2'528'000'000u);
  Result<std::uint64_t> half = model_bytes_from(7'000'000'001, 0.5, 0);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(*half, 3'500'000'001u);  // 3500000000.5 rounds half away from zero
  // Both, agreeing within 1%: the measured model_bytes wins.
  Result<std::uint64_t> both = model_bytes_from(632'000'000, 4, 2'530'000'000);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, 2'530'000'000u);
}

TEST(ModelBytes, PreciseErrors) {
  auto message = [](Result<std::uint64_t> r) {
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_NE(message(model_bytes_from(0, 0, 0)).find("model size missing"), std::string::npos);
  EXPECT_NE(message(model_bytes_from(100, 0, 0)).find("bytes_per_parameter is 0 or missing"),
            std::string::npos);
  EXPECT_NE(message(model_bytes_from(0, 4, 0)).find("parameter_count is 0 or missing"),
            std::string::npos);
  EXPECT_NE(message(model_bytes_from(100, -4, 0)).find("finite number > 0, got -4"),
            std::string::npos);
  EXPECT_NE(message(model_bytes_from(100, std::nan(""), 0)).find("finite"), std::string::npos);
  EXPECT_NE(message(model_bytes_from(std::numeric_limits<std::uint64_t>::max(), 2, 0))
                .find("overflows 64 bits"),
            std::string::npos);
  EXPECT_NE(message(model_bytes_from(1, 0.25, 0)).find("is 0 bytes"), std::string::npos);
  const std::string mismatch = message(model_bytes_from(632'000'000, 4, 1'264'000'000));
  EXPECT_NE(mismatch.find("model.model_bytes 1264000000 disagrees"), std::string::npos);
  EXPECT_NE(mismatch.find("= 2528000000"), std::string::npos);
}

}  // namespace
}  // namespace ramguard
