#pragma once
// A real Prometheus server for tests: Debian's `prometheus` on a free loopback port with a
// temporary storage directory, scraping one target every second and evaluating a rules file
// every second. Its HTTP API is read with a plain HTTP/1.0 GET.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ramguard::testing {

class ServedBinary;

struct ActiveAlert {
  std::string name;
  std::string state;  // "pending" or "firing"
  std::map<std::string, std::string> labels;
};

// One ramguardd to scrape, with the target labels the scrape config gives it (e.g. node).
struct ScrapeTarget {
  std::uint16_t port = 0;
  std::map<std::string, std::string> labels;
};

struct PrometheusOptions {
  std::vector<ScrapeTarget> targets;
  std::vector<std::string> rule_files_yaml;  // each written to its own file
  std::uint16_t port = 0;                    // 0: a free one
  std::string alertmanager;                  // "127.0.0.1:PORT" to send alerts to; "" none
};

class PrometheusServer {
 public:
  // Starts it scraping 127.0.0.1:`target_port` with `rules_yaml`; waits until it is ready and
  // has scraped the target once. Throws std::runtime_error naming what failed.
  PrometheusServer(std::uint16_t target_port, const std::string& rules_yaml);
  // The same for several targets; waits until every one was scraped once.
  explicit PrometheusServer(const PrometheusOptions& options);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // /api/v1/alerts: every pending or firing alert.
  std::vector<ActiveAlert> alerts() const;
  // /api/v1/query: the number of series in the instant result of `promql`.
  std::size_t series_count(const std::string& promql) const;
  std::string log() const;
  // /api/v1/query: the raw JSON answer.
  std::string query(const std::string& promql) const;
  std::uint16_t port() const { return port_; }
  // SIGTERM, then SIGKILL after 5 s; reaped. Idempotent (the destructor calls it).
  void stop();

 private:
  std::string get(const std::string& path) const;

  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ServedBinary> server_;
};

// The shipped rules with every `for:` shortened to `for_seconds`: the expressions under test are
// the shipped ones, only the waiting is shorter.
std::string rules_with_short_for(const std::string& shipped_yaml, int for_seconds);

}  // namespace ramguard::testing
