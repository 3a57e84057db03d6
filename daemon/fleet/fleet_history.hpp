#pragma once
// The admission desk's job history across the fleet (admission/sources.hpp): this node's ledger
// first; when it has no peak on record for the job, the fleet's, from a Prometheus-compatible
// endpoint that scrapes every node's ramguard_job_peak_bytes. The query runs on the io_context
// (prepare), bounded by a timeout, and its answer (or failure) is cached per job for a TTL, so
// an admission waits at most one timeout per job per TTL and the event loop never waits.
// Owner rules are the ledger's: only peaks of the owner's or trusted users' runs count.

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "admission/sources.hpp"
#include "config/config.hpp"
#include "config/http_url.hpp"
#include "fleet/peak_query.hpp"

namespace ramguard {

struct FleetSettings {
  HttpUrl url;
  std::chrono::nanoseconds lookback{std::chrono::hours(24 * 30)};
  std::chrono::nanoseconds timeout{std::chrono::milliseconds(500)};
  std::chrono::nanoseconds cache_ttl{std::chrono::minutes(5)};
  std::string bearer_token;
  JobNames job_names = JobNames::kPlain;  // how every node labels the job (not kOmit)
};

// Settings from the configuration: the URL parsed, the token read from its file. Errors name
// the key; metrics.job_names omit is an error (the series carry no job to ask about).
Result<FleetSettings> fleet_settings(const Config& config);

class FleetJobHistory final : public JobHistory {
 public:
  // `local`: this node's ledger, or nullptr without one.
  FleetJobHistory(asio::io_context& io, JobHistory* local, FleetSettings settings);
  void set_settings(FleetSettings settings);

  std::optional<MeasuredPeak> peak_on_record(const std::string& job,
                                             const std::vector<std::uint32_t>& owners) override;
  void prepare(const std::string& job, std::function<void()> ready) override;
  std::string note(const std::string& job) override;
  // At shutdown: the admissions waiting for a query are dropped with their requests, now, while
  // the server they belong to is still there (their queries' answers are then not awaited).
  void drop_waiting();

 private:
  struct Entry {
    std::chrono::steady_clock::time_point fetched{};
    bool answered = false;  // a fetch finished (fetched is then set)
    bool in_flight = false;
    std::string failure;  // "" when the last fetch succeeded
    std::vector<FleetPeak> peaks;
    std::vector<std::function<void()>> waiting;
  };
  void fetched(const std::string& job, Result<std::vector<FleetPeak>> peaks);
  std::string lookback_text() const;

  asio::io_context& io_;
  JobHistory* local_;
  FleetSettings settings_;
  std::map<std::string, Entry> cache_;
};

}  // namespace ramguard
