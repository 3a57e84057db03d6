// 64 threads race admissions whose total exceeds the budget. Whatever the interleaving, the
// admitted estimates never exceed budget - margin - baseline, every refusal states its terms,
// and the reservations on record are exactly the admitted ones.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <random>
#include <thread>
#include <vector>

#include "admission/admission.hpp"

namespace ramguard {
namespace {

constexpr std::uint64_t kGB = 1'000'000'000;
constexpr int kThreads = 64;

TEST(AdmissionRace, SixtyFourThreadsNeverOvercommit) {
  const std::uint64_t budget = 16 * kGB;
  const std::uint64_t margin = 1 * kGB;
  const std::uint64_t baseline = 2 * kGB;
  const std::uint64_t room = budget - margin - baseline;  // 13 GB
  SystemClock clock;
  std::mt19937_64 rng(12345);
  int iterations_with_refusals = 0;

  for (int iteration = 0; iteration < 200; ++iteration) {
    Admission admission(budget, margin, std::chrono::seconds(60), clock);
    // Estimates between 0.1 and 1.5 GB: 64 of them total ~51 GB, far more than the room.
    std::vector<std::uint64_t> estimates(kThreads);
    std::uint64_t requested = 0;
    for (auto& e : estimates) {
      e = 100'000'000 + rng() % 1'400'000'000;
      requested += e;
    }
    ASSERT_GT(requested, room);

    std::vector<Decision> decisions(kThreads);
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();  // maximize contention: everyone asks at once
        decisions[t] =
            admission.admit({"job-" + std::to_string(t), estimates[t], EstimateSource{}, baseline});
        // Readers interleave with the deciders.
        (void)admission.reserved_bytes();
        (void)admission.reservations();
      });
    }
    for (auto& th : threads) th.join();

    std::uint64_t admitted_sum = 0;
    std::vector<std::uint64_t> refused;
    for (int t = 0; t < kThreads; ++t) {
      const Decision& d = decisions[t];
      if (d.admitted) {
        admitted_sum += d.estimate_bytes;
        ASSERT_GE(d.headroom_bytes, 0);
        ASSERT_FALSE(d.reservation_id.empty());
      } else {
        refused.push_back(d.estimate_bytes);
        ASSERT_TRUE(d.reservation_id.empty());
        ASSERT_LT(d.headroom_bytes, 0);
        // The refusal's own terms add up to more than the limit, and its reason names them.
        ASSERT_GT(d.baseline_bytes + d.reserved_bytes + d.estimate_bytes, budget - margin);
        ASSERT_NE(d.reason.find("refused: baseline 2.00 GB + reserved "), std::string::npos)
            << d.reason;
        ASSERT_NE(d.reason.find("> budget 16.00 GB - margin 1.00 GB"), std::string::npos)
            << d.reason;
      }
      // Each decision saw only a consistent prefix of the others: never more than the room.
      ASSERT_LE(d.reserved_bytes, room);
    }
    ASSERT_LE(admitted_sum, room) << "iteration " << iteration;
    ASSERT_EQ(admission.reserved_bytes(), admitted_sum);
    ASSERT_GT(admitted_sum, 0u);
    // No spurious refusal: a refusal saw a subset of the final reservations, so each refused
    // estimate really does not fit beside what was admitted.
    for (std::uint64_t e : refused) ASSERT_GT(admitted_sum + e, room);
    if (!refused.empty()) ++iterations_with_refusals;
  }
  EXPECT_EQ(iterations_with_refusals, 200);
}

}  // namespace
}  // namespace ramguard
