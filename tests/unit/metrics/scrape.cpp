#include "unit/metrics/scrape.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <prometheus/text_serializer.h>
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

#include "metrics/target_scrape.hpp"

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
  static const std::string job = WatchList::job_for_pid(4242);
  return TargetRef{job, job};
}

PhaseRecord closed_phase(std::string phase, std::uint64_t peak_bytes, double seconds) {
  PhaseRecord record;
  record.phase = std::move(phase);
  record.peak_bytes = peak_bytes;
  record.begin.monotonic = std::chrono::seconds(100);
  record.end = record.begin;
  record.end->monotonic +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
  return record;
}

BoundaryRecord settled_boundary(std::uint32_t round, std::uint64_t rss_bytes,
                                std::uint64_t floor_bytes, std::uint64_t counted_bytes) {
  BoundaryRecord record;
  record.round = round;
  record.reading.rss_bytes = rss_bytes;
  record.reading.anon_bytes = counted_bytes;
  record.floor_bytes = floor_bytes;
  record.settled = true;
  return record;
}

RunLedger ended_run(std::string job, std::uint32_t owner_uid, std::uint64_t peak_bytes,
                    std::uint64_t estimate_bytes) {
  RunLedger ledger;
  ledger.info.job = std::move(job);
  ledger.info.owner_uid = owner_uid;
  ledger.info.estimate_bytes = estimate_bytes;
  ledger.state = RunState::kEnded;
  ledger.peak_bytes = peak_bytes;
  return ledger;
}

Decision admission(bool admitted, std::int64_t headroom_bytes) {
  Decision decision;
  decision.admitted = admitted;
  decision.headroom_bytes = headroom_bytes;
  return decision;
}

std::map<std::string, double> Parts::samples() const {
  std::ostringstream globals;
  prometheus::TextSerializer().Serialize(globals, registry.Collect());
  std::string out = globals.str();
  TargetScrape scrape;
  table.copy_to(scrape);
  for (std::size_t f = 0; f < kTargetFamilyCount; ++f) {
    scrape.write_family(static_cast<TargetFamily>(f), out);
  }
  return parse_samples(out);
}

void populate(MetricsExporter& exporter) {
  exporter.daemon()->set_budget(16'000'000'000, 500'000'000);
  exporter.daemon()->set_reserved_bytes(11'100'000'000);
  exporter.daemon()->set_runs_active(1);
  exporter.daemon()->set_user_reserved_bytes({{0, 11'100'000'000}, {1001, 0}});
  exporter.daemon()->set_user_active_runs({{0, 1}});
  exporter.daemon()->set_store_available(true);
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
    exporter.targets()->observe_reading(target, mark);
    exporter.targets()->observe_peak(target, 9'600'000'000, true);
    exporter.targets()->set_target_up(target, true,
                                      target.job == "vit-h" ? "" : "hwm_reset_denied");
    // The run's tree is slow to read (twice past the threshold) and has a PSS sum.
    const ReadTiming timing =
        target.job == "vit-h" ? ReadTiming{0.0125, 2, 0.06} : ReadTiming{0.000003, 0, 0};
    exporter.targets()->observe_sample(target, mark, 9'600'000'000, true, timing);
  }
  exporter.targets()->observe_phase(vit_run(), closed_phase("aggregation", 9'600'000'000, 6.75));
  exporter.targets()->observe_phase(vit_run(), closed_phase("synchronization", 7'000'000'000, 5.0));
  // Counted floor: the floor less the mark's uncounted 0.3 GB (RSS less anon): 6.1 GB.
  BoundaryRecord boundary = settled_boundary(3, 6'500'000'000, 6'400'000'000, 6'200'000'000);
  boundary.allocator = AllocatorFacts{};
  boundary.allocator->allocated_bytes = 5'000'000'000;
  boundary.allocator->retained_bytes = 1'300'000'000;
  exporter.targets()->observe_boundary(vit_run(), boundary);
  exporter.targets()->observe_scope(vit_run(), "cgroup");
  exporter.targets()->observe_gap(vit_run(), "aggregation.end->synchronization.begin", 5.0);
  exporter.jobs()->observe_admission("vit-h", 0, admission(true, 3'400'000'000));
  exporter.jobs()->observe_admission("vit-h", 0, admission(false, -1'200'000'000));
  exporter.jobs()->observe_run(ended_run("vit-h", 1000, 9'600'000'000, 11'100'000'000));
  Verdict growth;
  growth.kind = verdict_kind::kGrowthWarning;
  growth.severity = Severity::kWarning;
  growth.passed = false;
  exporter.targets()->observe_verdict(vit_run(), growth);
  Verdict release;
  release.kind = verdict_kind::kRelease;
  release.severity = Severity::kInfo;
  release.passed = true;
  exporter.targets()->observe_verdict(vit_run(), release);
  exporter.daemon()->observe_sample_duration(1.4e-6);
  exporter.daemon()->observe_sample_duration(3e-6);
  (void)exporter.daemon()->update_self("/proc/self/statm");
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
