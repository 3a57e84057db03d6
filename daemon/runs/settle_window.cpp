#include "runs/settle_window.hpp"

#include <algorithm>

#include "runs/held_room.hpp"
#include "verdicts/attribution.hpp"
#include "verdicts/classify.hpp"

namespace ramguard {

const BoundaryRecord& SettleWindow::open(BoundaryRecord boundary) {
  ledger_.boundaries.push_back(std::move(boundary));
  settling_ = ledger_.boundaries.size() - 1;
  return ledger_.boundaries.back();
}

std::optional<Instant> SettleWindow::due() const {
  if (!settling_) return std::nullopt;
  Instant at = ledger_.boundaries[*settling_].reading.at;
  at.monotonic += params_.settle;
  at.wall += params_.settle;
  return at;
}

bool SettleWindow::due_by(Instant now) const {
  const auto at = due();
  return at && now.monotonic >= at->monotonic;
}

std::optional<SettleWindow::Cut> SettleWindow::before_teardown(Instant cut, bool readings_until_cut,
                                                               bool active) const {
  const auto at = due();
  if (!at) return std::nullopt;
  if (cut.monotonic >= at->monotonic) return Cut{*settling_, *at, active};
  const Instant mark_at = ledger_.boundaries[*settling_].reading.at;
  return Cut{*settling_, readings_until_cut ? cut : mark_at, false};
}

bool SettleWindow::close(std::size_t index) {
  settling_.reset();
  return index < ledger_.boundaries.size() && !ledger_.boundaries[index].settled;
}

const BoundaryRecord& SettleWindow::settle(std::size_t index, Instant now,
                                           const SampleSeries& samples, bool full_window,
                                           const DetectorParams& detectors) {
  BoundaryRecord& boundary = ledger_.boundaries[index];
  auto low = samples.min_rss_between(boundary.reading.at, now);
  boundary.floor_bytes =
      std::min(boundary.reading.rss_bytes, low.value_or(boundary.reading.rss_bytes));
  boundary.settled = true;
  boundary.window_complete = full_window;
  growth_tracker_.add(floor_point(boundary), growth_context(ledger_.info), detectors);
  return boundary;
}

std::vector<Verdict> SettleWindow::judge_growth(const DetectorParams& detectors) {
  std::vector<Verdict> out;
  const GrowthAssessment& current = growth_tracker_.current();
  for (Verdict& v : new_growth_verdicts(growth_, current)) {
    attribute_to_processes(ledger_.boundaries, ledger_.info.model_bytes, detectors, v);
    out.push_back(std::move(v));
  }
  const std::uint32_t round = current.round;
  if (growth_tracker_.floors_seen() > 0 && round != classified_round_) {
    // Classification compares a round with the one before: the last two settled boundaries.
    std::vector<BoundaryRecord> last_two;
    for (auto it = ledger_.boundaries.rbegin(); it != ledger_.boundaries.rend(); ++it) {
      if (!it->settled) continue;
      last_two.insert(last_two.begin(), *it);
      if (last_two.size() == 2) break;
    }
    if (auto c =
            classify_growth(last_two, ledger_.info.model_bytes, detectors, ledger_.info.scope)) {
      attribute_to_processes(ledger_.boundaries, ledger_.info.model_bytes, detectors, c->verdict);
      out.push_back(std::move(c->verdict));
      classified_round_ = round;
    }
  }
  growth_ = current;
  return out;
}

void SettleWindow::resumed(BoundaryRecord boundary, const DetectorParams& detectors) {
  const bool judged = boundary.settled;
  boundary.settled = true;
  growth_tracker_.add(floor_point(boundary), growth_context(ledger_.info), detectors);
  if (judged) growth_ = growth_tracker_.current();
  ledger_.boundaries.push_back(std::move(boundary));
  trim();
}

void SettleWindow::trim(bool exact) {
  const std::size_t held = std::max<std::size_t>(params_.held_boundaries, 2);
  auto& boundaries = ledger_.boundaries;
  if (boundaries.size() > (exact ? held : held + held / 4)) {
    std::size_t drop = boundaries.size() - held;
    if (settling_) drop = std::min(drop, *settling_);  // the settling one stays
    for (std::size_t i = 0; i < drop; ++i) ledger_.earlier_boundaries.add(boundaries[i]);
    boundaries.erase(boundaries.begin(), boundaries.begin() + static_cast<long>(drop));
    if (settling_) *settling_ -= drop;
  }
  keep_room(boundaries, held + held / 4 + 1);
}

}  // namespace ramguard
