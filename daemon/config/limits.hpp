#pragma once
// Allowed ranges of configuration values, shared by the YAML loader, the command line and
// validate_config so every entry point refuses the same things with the same words.

#include <chrono>
#include <cstdint>

namespace ramguard::limits {

using namespace std::chrono_literals;

// Faster than 10 ms the sampler costs more than it tells; slower than 1 h it misses rounds.
inline constexpr std::chrono::nanoseconds kMinInterval = 10ms;
inline constexpr std::chrono::nanoseconds kMaxInterval = 1h;
inline constexpr std::chrono::nanoseconds kMaxWindow = 24h * 31;  // windows, retention, grace
inline constexpr std::uint32_t kMaxMetricsTargets = 100000;       // per-target series sets
inline constexpr std::uint32_t kMaxBuckets = 1'000'000;
inline constexpr std::uint64_t kMinFrameBytes = 1024;  // a status request must fit
inline constexpr std::uint64_t kMaxFrameBytes = 64ull * 1024 * 1024;
inline constexpr std::uint32_t kMaxConnections = 65536;
// Room for the largest reply (a long run's report is a few MB) without letting one client
// pin gigabytes.
inline constexpr std::uint64_t kMinUnreadOutputBytes = 64 * 1024;
inline constexpr std::uint64_t kMaxUnreadOutputBytes = 1024ull * 1024 * 1024;
inline constexpr std::uint32_t kMaxRuns = 100'000;
inline constexpr std::uint32_t kMaxMarksPerRun = 100'000'000;
inline constexpr std::uint32_t kMaxRequestsPerSecond = 1'000'000;
inline constexpr std::uint32_t kMaxRetentionDays = 36'500;
inline constexpr std::uint32_t kMaxRetainedRuns = 100'000'000;
inline constexpr std::uint32_t kMaxJournalWrites = 10'000'000;    // ~10 GB of memory: absurd above
inline constexpr std::uint64_t kMinRetentionBytes = 1024 * 1024;  // below: every run would go
inline constexpr std::uint32_t kMaxRounds = 1'000'000;            // warmup_rounds, fit_rounds
// The leak rule needs three growing steps, so four floors: fewer would pass the check and
// silently disable leak detection.
inline constexpr std::uint32_t kMinFitRounds = 4;
inline constexpr double kMinCalibrationFactor = 1.0;  // below 1 admits less than was measured
inline constexpr double kMaxCalibrationFactor = 10.0;
inline constexpr double kMaxPlanCopies = 1e6;
inline constexpr double kMaxThresholdCopies = 1e4;  // thresholds in model copies
inline constexpr std::uint64_t kMaxConfigFileBytes = 1024 * 1024;
inline constexpr std::size_t kMaxNameLength = 64;  // plan, phase and state names

}  // namespace ramguard::limits
