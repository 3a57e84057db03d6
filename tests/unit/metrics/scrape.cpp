#include "unit/metrics/scrape.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef RAMGUARD_PROMTOOL
#define RAMGUARD_PROMTOOL "promtool"
#endif

namespace ramguard::testkit {

namespace {

Result<HttpResponse> http_exchange(std::uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{std::string("socket: ") + std::strerror(errno)};
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    const int err = errno;
    ::close(fd);
    return Error{"connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(err)};
  }
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return Error{"send failed"};
  }
  std::string raw;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) break;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Error{std::string("recv: ") + std::strerror(err)};
    }
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const std::size_t split = raw.find("\r\n\r\n");
  if (split == std::string::npos || raw.compare(0, 5, "HTTP/") != 0) {
    return Error{"not an HTTP response: " + raw.substr(0, 80)};
  }
  HttpResponse response;
  response.headers = raw.substr(0, split);
  response.body = raw.substr(split + 4);
  response.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  return response;
}

}  // namespace

Result<HttpResponse> http_get(std::uint16_t port, const std::string& path) {
  return http_exchange(port, "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
}

Result<HttpResponse> http11_get(std::uint16_t port, std::size_t* chunks) {
  auto response =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (!response) return response;
  if (response->headers.find("Transfer-Encoding: chunked") == std::string::npos) return response;
  // size in hex, CRLF, data, CRLF; a zero size ends the body.
  std::string body;
  std::size_t at = 0;
  std::size_t count = 0;
  for (;;) {
    const std::size_t eol = response->body.find("\r\n", at);
    if (eol == std::string::npos) return Error{"chunked body cut short"};
    const std::size_t size = std::strtoul(response->body.c_str() + at, nullptr, 16);
    if (size == 0) break;
    body.append(response->body, eol + 2, size);
    at = eol + 2 + size + 2;
    ++count;
  }
  response->body = std::move(body);
  if (chunks != nullptr) *chunks = count;
  return response;
}

std::map<std::string, double> parse_samples(const std::string& exposition) {
  std::map<std::string, double> samples;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // The value follows the last space (no timestamps are exported).
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    samples[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return samples;
}

std::string series_key(const std::string& name, std::map<std::string, std::string> labels) {
  if (labels.empty()) return name;
  std::string key = name + "{";
  bool first = true;
  for (const auto& [label, value] : labels) {
    if (!first) key += ",";
    first = false;
    key += label + "=\"" + value + "\"";
  }
  return key + "}";
}

std::optional<double> sample(const std::map<std::string, double>& samples, const std::string& name,
                             std::map<std::string, std::string> labels) {
  auto it = samples.find(series_key(name, std::move(labels)));
  if (it == samples.end()) return std::nullopt;
  return it->second;
}

TargetRef vit_run() {
  return TargetRef{"vit-h", "run-vit-1"};
}

TargetRef watched_pid() {
  static const std::string job = MetricsExporter::job_for_pid(4242);
  return TargetRef{job, job};
}

void populate(MetricsExporter& exporter) {
  exporter.set_budget(16'000'000'000, 500'000'000);
  exporter.set_reserved_bytes(11'100'000'000);
  exporter.set_runs_active(1);
  exporter.set_user_reserved_bytes({{0, 11'100'000'000}, {1001, 0}});
  exporter.set_user_active_runs({{0, 1}});
  exporter.set_store_available(true);
  for (const TargetRef& target : {vit_run(), watched_pid()}) {
    MemoryReading mark;
    mark.source = ReadingSource::kMark;
    mark.at.wall = std::chrono::seconds(1'700'000'000);
    mark.rss_bytes = 9'600'000'000;
    mark.anon_bytes = 9'000'000'000;
    mark.file_bytes = 500'000'000;
    mark.shmem_bytes = 100'000'000;
    mark.swap_bytes = 4096;
    mark.hwm_bytes = 9'600'000'000;
    exporter.observe_reading(target, mark);
    exporter.observe_peak(target, 9'600'000'000, true);
    exporter.set_target_up(target, true, target.job == "vit-h" ? "" : "hwm_reset_denied");
    // The run's tree is slow to read (twice past the threshold) and has a PSS sum.
    const ReadTiming timing =
        target.job == "vit-h" ? ReadTiming{0.0125, 2, 0.06} : ReadTiming{0.000003, 0, 0};
    exporter.observe_sample(target, mark, 9'600'000'000, true, timing);
  }
  exporter.observe_phase(vit_run(), "aggregation", 9'600'000'000, 6.75);
  exporter.observe_phase(vit_run(), "synchronization", 7'000'000'000, 5.0);
  exporter.observe_boundary(vit_run(), 3, 6'500'000'000, 6'400'000'000, 6'100'000'000);
  exporter.observe_allocator(vit_run(), 5'000'000'000, 1'300'000'000);
  exporter.observe_scope(vit_run(), "cgroup");
  exporter.observe_gap(vit_run(), "aggregation.end->synchronization.begin", 5.0);
  exporter.observe_admission("vit-h", 0, true, 3'400'000'000);
  exporter.observe_admission("vit-h", 0, false, -1'200'000'000);
  exporter.observe_job_run("vit-h", 1000, 9'600'000'000, 11'100'000'000);
  Verdict growth;
  growth.kind = verdict_kind::kGrowthWarning;
  growth.severity = Severity::kWarning;
  growth.passed = false;
  exporter.observe_verdict(vit_run(), growth);
  Verdict release;
  release.kind = verdict_kind::kRelease;
  release.severity = Severity::kInfo;
  release.passed = true;
  exporter.observe_verdict(vit_run(), release);
  exporter.observe_sample_duration(1.4e-6);
  exporter.observe_sample_duration(3e-6);
  (void)exporter.update_self("/proc/self/statm");
}

CommandOutput promtool_check_metrics(const std::string& exposition) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto file = dir / ("ramguard-scrape-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(file) << exposition;
  const std::string command =
      std::string(RAMGUARD_PROMTOOL) + " check metrics < '" + file.string() + "' 2>&1";
  CommandOutput result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::filesystem::remove(file);
  return result;
}

}  // namespace ramguard::testkit
