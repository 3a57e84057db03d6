#pragma once
// Test kit for the exporter: a tiny blocking HTTP GET over a POSIX socket (the way Prometheus
// scrapes), a parser of the text exposition format, and a populate() that fills every family.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "admission/admission.hpp"
#include "metrics/exporter.hpp"
#include "metrics/families.hpp"
#include "metrics/job_label.hpp"
#include "model/ledger.hpp"
#include "ramguard/base/result.hpp"
#include "runs/watch_list.hpp"

namespace ramguard::testkit {

struct HttpResponse {
  int status = 0;
  std::string headers;
  std::string body;
};

// GET http://127.0.0.1:PORT/PATH with HTTP/1.0 (the server closes after the response).
Result<HttpResponse> http_get(std::uint16_t port, const std::string& path = "/metrics");
// The same as Prometheus asks: HTTP/1.1, with "Connection: close". A chunked body is decoded
// (its chunk count in `chunks`); the headers are kept as sent.
Result<HttpResponse> http11_get(std::uint16_t port, std::size_t* chunks = nullptr);

// Sample lines of an exposition, keyed as printed: `name{a="1",b="2"}` (prometheus-cpp sorts
// labels by name) or `name` without labels.
std::map<std::string, double> parse_samples(const std::string& exposition);

// The key parse_samples() uses, labels given in any order.
std::string series_key(const std::string& name, std::map<std::string, std::string> labels = {});

std::optional<double> sample(const std::map<std::string, double>& samples, const std::string& name,
                             std::map<std::string, std::string> labels = {});

// Every observer call of the exporter at least once, for a run of job "vit-h" (vit_run()) and
// a watched PID (watched_pid()), with known values.
void populate(MetricsExporter& exporter);
TargetRef vit_run();
TargetRef watched_pid();

// The records the exporter takes, with the figures a test names.
PhaseRecord closed_phase(std::string phase, std::uint64_t peak_bytes, double seconds);
// A settled round boundary: the mark's RSS, of which `counted_bytes` counts (anon), and the
// settle window's floor.
BoundaryRecord settled_boundary(std::uint32_t round, std::uint64_t rss_bytes,
                                std::uint64_t floor_bytes, std::uint64_t counted_bytes);
// A run of `job` that ended with this peak, admitted with `estimate_bytes` (0: none).
RunLedger ended_run(std::string job, std::uint32_t owner_uid, std::uint64_t peak_bytes,
                    std::uint64_t estimate_bytes);
Decision admission(bool admitted, std::int64_t headroom_bytes);

// The exporter's parts on their own, without its server or lock: what each part exports is
// read from the exposition they make together.
struct Parts {
  prometheus::Registry registry;
  MetricFamilies families{registry};
  DaemonSeries daemon{families};
  TargetTable table{families};
  TargetMetrics targets{table};
  JobSeries jobs{table};
  // The samples of the registry's families and every target's series.
  std::map<std::string, double> samples() const;
};

struct CommandOutput {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs `promtool check metrics` on the exposition.
CommandOutput promtool_check_metrics(const std::string& exposition);

}  // namespace ramguard::testkit
