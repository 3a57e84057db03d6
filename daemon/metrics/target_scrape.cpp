#include "metrics/target_scrape.hpp"

#include "metrics/exposition.hpp"

namespace ramguard {

void TargetScrape::clear() {
  rows_.clear();
  labels_.clear();
  for (std::string& text : others_) text.clear();
}

void TargetScrape::add(const TargetState& target) {
  if (target.hot_present != 0) {
    Row& row = rows_.emplace_back();
    row.labels_at = static_cast<std::uint32_t>(labels_.size());
    row.job_size = static_cast<std::uint32_t>(target.job_labels.size());
    labels_ += target.job_labels;
    if (!target.run_labels.empty()) (labels_ += ',') += target.run_labels;
    row.labels_size = static_cast<std::uint32_t>(labels_.size()) - row.labels_at;
    row.present = target.hot_present;
    row.hot = target.hot;
  }
  for (const TargetState::Series& s : target.series) {
    exposition::append_sample(others_[static_cast<std::size_t>(s.family)], info(s.family).name,
                              s.labels, s.value);
  }
}

void TargetScrape::write_family(TargetFamily family, std::string& out) const {
  const TargetFamilyInfo& about = info(family);
  exposition::append_header(out, about.name, about.help, about.counter ? "counter" : "gauge");
  // This family's inline series: consecutive slots.
  std::size_t first = 0;
  while (first < kHotSeriesCount && hot_series_info(first).family != family) ++first;
  std::size_t last = first;
  while (last < kHotSeriesCount && hot_series_info(last).family == family) ++last;
  for (std::size_t slot = first; slot < last; ++slot) {
    const HotSeriesInfo& h = hot_series_info(slot);
    const std::string_view extra = h.rendered;
    const std::string_view before = h.before_job ? extra : std::string_view();
    const std::string_view after = h.before_job ? std::string_view() : extra;
    const auto bit = static_cast<std::uint16_t>(1u << slot);
    for (const Row& row : rows_) {
      if ((row.present & bit) == 0) continue;
      const std::string_view own(labels_.data() + row.labels_at, row.labels_size);
      exposition::append_line(
          out, about.name, {before, own.substr(0, row.job_size), after, own.substr(row.job_size)},
          row.hot[slot]);
    }
  }
  out += others_[static_cast<std::size_t>(family)];
}

}  // namespace ramguard
