#include "runs/release_check.hpp"

#include <array>

#include "verdicts/release.hpp"

namespace ramguard {
namespace {

// After the end: read at 50 ms, then doubling up to 1.6 s (then the periodic sampler).
constexpr std::array<std::chrono::milliseconds, 6> kReadOffsets{
    std::chrono::milliseconds(50),  std::chrono::milliseconds(100),
    std::chrono::milliseconds(200), std::chrono::milliseconds(400),
    std::chrono::milliseconds(800), std::chrono::milliseconds(1600)};

}  // namespace

std::optional<Instant> ReleaseCheck::next_read() const {
  if (!ledger_.ended || reads_ >= kReadOffsets.size()) return std::nullopt;
  Instant at = *ledger_.ended;
  at.monotonic += kReadOffsets[reads_];
  at.wall += kReadOffsets[reads_];
  return at;
}

bool ReleaseCheck::take_due_reads(Instant now) {
  bool due = false;
  for (auto at = next_read(); at && at->monotonic <= now.monotonic; at = next_read()) {
    ++reads_;
    due = true;
  }
  return due;
}

std::optional<Instant> ReleaseCheck::next_deadline(const DetectorParams& detectors) const {
  if (!pending()) return std::nullopt;
  const auto grace = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(detectors.release_grace_seconds));
  Instant at = *ledger_.ended;
  at.monotonic += grace;
  at.wall += grace;
  if (auto read_at = next_read(); read_at && read_at->monotonic < at.monotonic) return read_at;
  return at;
}

std::optional<Verdict> ReleaseCheck::check(Instant now, const SampleSeries& samples,
                                           std::chrono::nanoseconds settle,
                                           const DetectorParams& detectors) {
  if (!pending()) return std::nullopt;
  ReleaseInput input;
  input.baseline = ledger_.baseline;
  input.ended = *ledger_.ended;
  const auto after = samples.readings_since(*ledger_.ended);
  input.after_end = after;
  input.now = now;
  input.exited = exited_at_;
  input.settle_seconds = std::chrono::duration<double>(settle).count();
  input.model_bytes = ledger_.info.model_bytes;
  input.facts = end_facts_;
  const ReleaseAssessment release = assess_release(input, detectors);
  if (release.state == ReleaseState::kPending) return std::nullopt;
  decided_ = true;
  return release.verdict;
}

}  // namespace ramguard
