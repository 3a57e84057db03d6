#include "prometheus_server.hpp"

#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness.hpp"
#include "served_binary.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard::testing {
namespace {

std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

google::protobuf::Struct parse_json(const std::string& body) {
  google::protobuf::Struct parsed;
  if (!google::protobuf::util::JsonStringToMessage(body, &parsed).ok()) {
    throw std::runtime_error("Prometheus answered with something that is not JSON: " +
                             body.substr(0, 200));
  }
  return parsed;
}

}  // namespace

std::string rules_with_short_for(const std::string& shipped_yaml, int for_seconds) {
  static const std::regex kFor(R"(^(\s+for:\s*)\S+\s*$)");
  std::istringstream in(shipped_yaml);
  std::string line, out;
  while (std::getline(in, line)) {
    std::smatch m;
    out += std::regex_match(line, m, kFor) ? m[1].str() + std::to_string(for_seconds) + "s" : line;
    out += "\n";
  }
  return out;
}

PrometheusServer::PrometheusServer(std::uint16_t target_port, const std::string& rules_yaml)
    : PrometheusServer(PrometheusOptions{{{target_port, {}}}, {rules_yaml}, 0, ""}) {}

PrometheusServer::PrometheusServer(const PrometheusOptions& options)
    : dir_(make_temp_dir("prometheus")),
      port_(options.port != 0 ? options.port : free_loopback_port()) {
  std::ofstream config(dir_ / "prometheus.yml");
  config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
         << "rule_files:\n";
  for (std::size_t i = 0; i < options.rule_files_yaml.size(); ++i) {
    const std::string name = "rules" + std::to_string(i) + ".yml";
    std::ofstream(dir_ / name) << options.rule_files_yaml[i];
    config << "  - " << name << "\n";
  }
  if (!options.alertmanager.empty()) {
    config << "alerting:\n  alertmanagers:\n    - static_configs:\n"
           << "        - targets: [\"" << options.alertmanager << "\"]\n";
  }
  config << "scrape_configs:\n  - job_name: ramguard\n    static_configs:\n";
  for (const ScrapeTarget& t : options.targets) {
    config << "      - targets: [\"127.0.0.1:" << t.port << "\"]\n";
    if (!t.labels.empty()) {
      config << "        labels:\n";
      for (const auto& [k, v] : t.labels) config << "          " << k << ": \"" << v << "\"\n";
    }
  }
  config.close();
  server_ = std::make_unique<ServedBinary>(
      RAMGUARD_PROMETHEUS,
      std::vector<std::string>{"--config.file=" + (dir_ / "prometheus.yml").string(),
                               "--storage.tsdb.path=" + (dir_ / "data").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                               "--log.level=warn", "--storage.tsdb.retention.time=1h"},
      dir_ / "prometheus.log", port_);
  if (!eventually([&] { return series_count("ramguard_budget_bytes") == options.targets.size(); },
                  std::chrono::seconds(15), std::chrono::milliseconds(200))) {
    throw std::runtime_error("prometheus never scraped every ramguardd: " + log());
  }
}

void PrometheusServer::stop() {
  server_->stop();
}

PrometheusServer::~PrometheusServer() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string PrometheusServer::get(const std::string& path) const {
  auto r = testkit::http_get(port_, path);
  if (!r.ok()) throw std::runtime_error("GET " + path + ": " + r.error().message);
  if (r->status != 200) {
    throw std::runtime_error("GET " + path + ": HTTP " + std::to_string(r->status) + " " +
                             r->body.substr(0, 300));
  }
  return r->body;
}

std::vector<ActiveAlert> PrometheusServer::alerts() const {
  const auto parsed = parse_json(get("/api/v1/alerts"));
  std::vector<ActiveAlert> out;
  const auto& alerts =
      parsed.fields().at("data").struct_value().fields().at("alerts").list_value().values();
  for (const auto& a : alerts) {
    const auto& fields = a.struct_value().fields();
    ActiveAlert alert;
    alert.state = fields.at("state").string_value();
    for (const auto& [k, v] : fields.at("labels").struct_value().fields()) {
      alert.labels[k] = v.string_value();
    }
    alert.name = alert.labels["alertname"];
    out.push_back(std::move(alert));
  }
  return out;
}

std::size_t PrometheusServer::series_count(const std::string& promql) const {
  const auto parsed = parse_json(get("/api/v1/query?query=" + url_encode(promql)));
  return static_cast<std::size_t>(
      parsed.fields().at("data").struct_value().fields().at("result").list_value().values_size());
}

std::string PrometheusServer::query(const std::string& promql) const {
  return get("/api/v1/query?query=" + url_encode(promql));
}

std::string PrometheusServer::log() const {
  return server_->log();
}

}  // namespace ramguard::testing
