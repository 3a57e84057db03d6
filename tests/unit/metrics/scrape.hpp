#pragma once
// Test kit for the exporter: a tiny blocking HTTP GET over a POSIX socket (the way Prometheus
// scrapes), a parser of the text exposition format, and a populate() that fills every family.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "metrics/exporter.hpp"
#include "ramguard/base/result.hpp"

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

struct CommandOutput {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs `promtool check metrics` on the exposition.
CommandOutput promtool_check_metrics(const std::string& exposition);

}  // namespace ramguard::testkit
