// Prints a real scrape of the exporter with every family populated: the reference the deploy
// tests check dashboard and alert-rule metric names against. Exits non-zero on any failure.
#include <cstdio>
#include <iostream>

#include "metrics/exporter.hpp"
#include "unit/metrics/scrape.hpp"

int main() {
  auto exporter = ramguard::MetricsExporter::start(ramguard::Endpoint{"127.0.0.1", 0});
  if (!exporter.ok()) {
    std::cerr << "metrics_sample: " << exporter.error().message << "\n";
    return 1;
  }
  ramguard::testkit::populate(**exporter);
  auto response = ramguard::testkit::http_get((*exporter)->port());
  if (!response.ok() || response->status != 200) {
    std::cerr << "metrics_sample: scrape failed: "
              << (response.ok() ? "HTTP " + std::to_string(response->status)
                                : response.error().message)
              << "\n";
    return 1;
  }
  std::cout << response->body;
  return std::cout.good() ? 0 : 1;
}
