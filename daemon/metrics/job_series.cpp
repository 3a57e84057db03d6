#include "metrics/job_series.hpp"

#include <cstdint>
#include <iterator>

namespace ramguard {

JobState& JobSeries::job(std::string_view name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) {
    // Past the limit every new job shares one bucket rather than growing the scrape.
    if (jobs_.size() >= kMaxJobs) name = kOverflowLabelValue;
    it = jobs_.find(name);
    if (it == jobs_.end()) {
      it = jobs_.try_emplace(std::string(name)).first;
      it->second.name = std::string(name);
    }
  }
  it->second.retired_at.reset();
  return it->second;
}

std::string JobSeries::series_key(const void* family, const prometheus::Labels& extra) {
  std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(family));
  for (const auto& [name, value] : extra) {
    key += '\x1f';
    key += name;
    key += '=';
    key += value;
  }
  return key;
}

void JobSeries::remove_metric(JobState& job, const void* family, const prometheus::Labels& extra) {
  auto it = job.series.find(series_key(family, extra));
  if (it == job.series.end()) return;
  it->second.remove();
  job.series.erase(it);
}

std::string JobSeries::bounded_value(JobState& job, std::string_view label,
                                     std::string_view value) {
  std::string bounded(value.substr(0, kMaxLabelValueLength));
  auto it = job.label_values.find(label);
  if (it == job.label_values.end()) it = job.label_values.try_emplace(std::string(label)).first;
  auto& seen = it->second;
  if (seen.count(bounded) != 0) return bounded;
  if (seen.size() >= kMaxValuesPerLabel) return kOverflowLabelValue;
  seen.insert(bounded);
  return bounded;
}

void JobSeries::remove_all(JobState& job) {
  for (auto& [key, series] : job.series) series.remove();
  job.series.clear();
}

void JobSeries::retire(std::string_view name, std::chrono::nanoseconds now) {
  auto it = jobs_.find(name);
  if (it != jobs_.end()) it->second.retired_at = now;
}

std::size_t JobSeries::sweep(std::chrono::nanoseconds now, std::chrono::nanoseconds retention) {
  std::size_t removed = 0;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const auto& retired = it->second.retired_at;
    if (retired && now - *retired >= retention) {
      remove_all(it->second);
      it = jobs_.erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

void JobSeries::remove(std::string_view name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;
  remove_all(it->second);
  jobs_.erase(it);
}

}  // namespace ramguard
