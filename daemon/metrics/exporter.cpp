#include "metrics/exporter.hpp"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "common/log.hpp"
#include "metrics/families.hpp"
#include "metrics/http_server.hpp"
#include "metrics/listen_probe.hpp"
#include "metrics/target_scrape.hpp"

namespace ramguard {

MetricsExporter::MetricsExporter()
    : registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<MetricFamilies>(*registry_)),
      daemon_(std::make_unique<DaemonSeries>(*families_)),
      table_(std::make_unique<TargetTable>(*families_)),
      targets_(std::make_unique<TargetMetrics>(*table_)),
      jobs_(std::make_unique<JobSeries>(*table_)) {}

MetricsExporter::~MetricsExporter() {
  // Stop serving before the registry and families go away.
  server_.reset();
}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::start(const Endpoint& address) {
  std::unique_ptr<MetricsExporter> exporter(new MetricsExporter());
  MetricsExporter* self = exporter.get();
  auto server = MetricsHttpServer::start(
      address.to_string(), [self](std::string& out, const MetricsHttpServer::Flush& flush) {
        self->render(out, flush);
      });
  if (!server) {
    // civetweb only says it could not start; a probe bind says why.
    std::string why = probe_listen_error(address);
    if (why.empty()) why = server.error().message;
    return Error{"metrics address '" + address.to_string() + "': cannot listen: " + why};
  }
  exporter->server_ = std::move(*server);
  return exporter;
}

std::uint16_t MetricsExporter::port() const {
  return server_->port();
}

void MetricsExporter::render(std::string& out,
                             const std::function<void(std::string&)>& flush) const {
  // The daemon-wide families are few: prometheus-cpp's serializer is fine for them.
  std::ostringstream globals;
  prometheus::TextSerializer().Serialize(globals, registry_->Collect());
  out += globals.view();
  // Kept by the log itself (common/log.hpp), which no lock of ours guards.
  out +=
      "# HELP ramguard_log_lines_suppressed_total Log lines caused by clients' requests that "
      "their user's log rate limit dropped\n"
      "# TYPE ramguard_log_lines_suppressed_total counter\n"
      "ramguard_log_lines_suppressed_total " +
      std::to_string(log::lines_suppressed_total()) + "\n";
  // The targets' series are copied under the lock, then written and sent without it (a slow
  // reader must not stall sampling).
  TargetScrape scrape;
  table()->copy_to(scrape);
  constexpr std::size_t kFlushBytes = 64 * 1024;
  for (std::size_t f = 0; f < kTargetFamilyCount; ++f) {
    scrape.write_family(static_cast<TargetFamily>(f), out);
    if (out.size() >= kFlushBytes) flush(out);
  }
}

}  // namespace ramguard
