#include "fleet/fleet_history.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "config/token_file.hpp"
#include "config/values.hpp"
#include "fleet/http_get.hpp"
#include "metrics/job_label.hpp"
#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

// Jobs remembered at once; past it the cache starts over (one query per job again).
constexpr std::size_t kMaxCachedJobs = 4096;

}  // namespace

Result<FleetSettings> fleet_settings(const Config& config) {
  const FleetHistoryConfig& c = config.admission.history;
  if (config.metrics.job_names == JobNames::kOmit) {
    return Error{
        "admission.history.prometheus_url needs metrics.job_names plain or hash: with "
        "omit no node exports which job a peak belongs to"};
  }
  auto url = parse_http_url(c.prometheus_url);
  if (!url) return Error{"admission.history.prometheus_url: " + url.error().message};
  FleetSettings s;
  s.url = *url;
  s.lookback = c.lookback;
  s.timeout = c.timeout;
  s.cache_ttl = c.cache_ttl;
  s.job_names = config.metrics.job_names;
  if (!c.token_file.empty()) {
    auto token = read_token_file(c.token_file, "admission.history token");
    if (!token) return token.error();
    s.bearer_token = *token;
  }
  return s;
}

FleetJobHistory::FleetJobHistory(asio::io_context& io, JobHistory* local, FleetSettings settings)
    : io_(io), local_(local), settings_(std::move(settings)) {}

void FleetJobHistory::set_settings(FleetSettings settings) {
  settings_ = std::move(settings);
  // Answers for another endpoint or label scheme no longer hold; fetches in flight finish.
  for (auto it = cache_.begin(); it != cache_.end();) {
    it = it->second.in_flight ? std::next(it) : cache_.erase(it);
  }
}

std::optional<MeasuredPeak> FleetJobHistory::peak_on_record(
    const std::string& job, const std::vector<std::uint32_t>& owners) {
  if (local_ != nullptr) {
    if (auto local = local_->peak_on_record(job, owners)) return local;
  }
  auto it = cache_.find(job);
  if (it == cache_.end() || !it->second.failure.empty()) return std::nullopt;
  const FleetPeak* best = nullptr;
  for (const FleetPeak& p : it->second.peaks) {
    const bool counts =
        owners.empty() || std::find(owners.begin(), owners.end(), p.uid) != owners.end();
    if (counts && (best == nullptr || p.peak_bytes > best->peak_bytes)) best = &p;
  }
  if (best == nullptr) return std::nullopt;
  const std::string node = best->node.empty() ? "an unnamed node" : best->node;
  return MeasuredPeak{"fleet:" + node, best->peak_bytes,
                      "fleet peak " + format_bytes(static_cast<double>(best->peak_bytes)) +
                          " over " + lookback_text() + ", " + node};
}

void FleetJobHistory::prepare(const std::string& job, std::function<void()> ready) {
  if (cache_.size() >= kMaxCachedJobs && !cache_.contains(job)) {
    std::erase_if(cache_, [](const auto& e) { return !e.second.in_flight; });
  }
  Entry& entry = cache_[job];
  const auto now = std::chrono::steady_clock::now();
  if (entry.answered && now - entry.fetched < settings_.cache_ttl) {
    ready();
    return;
  }
  entry.waiting.push_back(std::move(ready));
  if (entry.in_flight) return;
  entry.in_flight = true;
  HttpGet get;
  get.url = settings_.url;
  get.target = query_target(peak_promql(job_label(job, settings_.job_names), settings_.lookback));
  get.bearer_token = settings_.bearer_token;
  get.timeout = settings_.timeout;
  async_http_get(io_, std::move(get), [this, job](Result<HttpReply> reply) {
    if (!reply) return fetched(job, reply.error());
    if (reply->status != 200) {
      // Prometheus explains a bad query in the JSON body; anything else by its status.
      auto explained = parse_peak_reply(reply->body);
      return fetched(job, Error{"HTTP " + std::to_string(reply->status) +
                                (explained ? "" : ": " + explained.error().message)});
    }
    fetched(job, parse_peak_reply(reply->body));
  });
}

void FleetJobHistory::drop_waiting() {
  for (auto& [job, entry] : cache_) {
    auto waiting = std::move(entry.waiting);
    entry.waiting.clear();
  }
}

void FleetJobHistory::fetched(const std::string& job, Result<std::vector<FleetPeak>> peaks) {
  Entry& entry = cache_[job];
  entry.in_flight = false;
  entry.answered = true;
  entry.fetched = std::chrono::steady_clock::now();
  if (peaks) {
    entry.failure.clear();
    entry.peaks = std::move(*peaks);
  } else {
    entry.failure = peaks.error().message;
    entry.peaks.clear();
    log::warning("admission.fleet_history", {{"job", job}, {"message", entry.failure}});
  }
  auto waiting = std::move(entry.waiting);
  entry.waiting.clear();
  for (auto& ready : waiting) ready();
}

std::string FleetJobHistory::note(const std::string& job) {
  auto it = cache_.find(job);
  if (it == cache_.end() || it->second.failure.empty()) return "";
  return "fleet history unavailable (" + it->second.failure + "): local history only";
}

std::string FleetJobHistory::lookback_text() const {
  using std::chrono::hours;
  const auto h = std::chrono::duration_cast<hours>(settings_.lookback).count();
  if (settings_.lookback == hours(h) && h % 24 == 0) return std::to_string(h / 24) + " d";
  return format_duration(settings_.lookback);
}

}  // namespace ramguard
