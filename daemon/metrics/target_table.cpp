#include "metrics/target_table.hpp"

#include "common/log.hpp"
#include "metrics/families.hpp"

namespace ramguard {

TargetTable::TargetTable(MetricFamilies& families)
    : max_targets_(families.max_targets.Add({})), targets_folded_(families.targets_folded.Add({})) {
  max_targets_.Set(static_cast<double>(series_.max_targets()));
  targets_folded_.Set(0);
}

void TargetTable::set_max_targets(std::size_t max_targets) {
  series_.set_max_targets(max_targets);
  max_targets_.Set(static_cast<double>(max_targets));
}

void TargetTable::set_max_targets_per_user(std::size_t max_targets) {
  series_.set_max_targets_per_user(max_targets);
}

std::string TargetTable::job_key(std::string_view job) {
  return "admission:" + std::string(job);
}

TargetState& TargetTable::entry(std::string_view key, const Labels& labels,
                                std::uint32_t owner_uid) {
  const std::size_t folded_before = series_.folded_count();
  const bool by_owner = owner_uid != 0 && series_.max_targets_per_user() != 0 &&
                        series_.live_targets_of(owner_uid) >= series_.max_targets_per_user();
  TargetState& state = series_.target(key, labels, owner_uid);
  const std::size_t folded = series_.folded_count();
  if (folded != folded_before) {
    targets_folded_.Set(static_cast<double>(folded));
    // Loud at the first fold, then at each doubling: never silent, never one line per target.
    if ((folded & (folded - 1)) == 0) {
      // Bounded by the doubling, so not charged to the user whose request folded it: a flood of
      // its own lines must not hide this one.
      const log::PeerScope not_limited(owner_uid, "", /*limited=*/false);
      log::warning("metrics.targets_folded",
                   {{"folded", folded},
                    {"max_targets", series_.max_targets()},
                    {"owner_uid", owner_uid},
                    {"owner_targets", series_.live_targets_of(owner_uid)},
                    {"latest", std::string(key)},
                    {"hint", by_owner ? "raise metrics.max_targets_per_user"
                                      : "raise metrics.max_targets"}});
    }
  }
  return state;
}

void TargetTable::forget_folded(std::string_view key) {
  series_.forget_folded(key);
  targets_folded_.Set(static_cast<double>(series_.folded_count()));
}

std::size_t TargetTable::sweep(Instant now) {
  return series_.sweep(now.monotonic, retention_);
}

}  // namespace ramguard
