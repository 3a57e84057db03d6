#include "alertmanager_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "harness.hpp"
#include "served_binary.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard::testing {

std::string alertmanager_config_for_test(const std::string& shipped_yaml, std::uint16_t port,
                                         const std::string& group_wait,
                                         const std::string& group_interval) {
  std::string out = std::regex_replace(shipped_yaml, std::regex(R"(url: http://[^/\s]+/)"),
                                       "url: http://127.0.0.1:" + std::to_string(port) + "/");
  out = std::regex_replace(out, std::regex(R"(group_wait: \S+)"), "group_wait: " + group_wait);
  out = std::regex_replace(out, std::regex(R"(group_interval: \S+)"),
                           "group_interval: " + group_interval);
  return out;
}

AlertmanagerServer::AlertmanagerServer(const std::string& config_yaml)
    : dir_(make_temp_dir("alertmanager")), port_(free_loopback_port()) {
  std::ofstream(dir_ / "alertmanager.yml") << config_yaml;
  // An empty cluster address turns clustering off: one instance, nothing else listening.
  server_ = std::make_unique<ServedBinary>(
      RAMGUARD_ALERTMANAGER,
      std::vector<std::string>{"--config.file=" + (dir_ / "alertmanager.yml").string(),
                               "--storage.path=" + (dir_ / "data").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                               "--cluster.listen-address=", "--log.level=warn"},
      dir_ / "alertmanager.log", port_);
}

AlertmanagerServer::~AlertmanagerServer() {
  server_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string AlertmanagerServer::log() const {
  return server_->log();
}

WebhookReceiver::WebhookReceiver() {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener_, 16) != 0) {
    throw std::runtime_error("webhook receiver: cannot listen on 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

WebhookReceiver::~WebhookReceiver() {
  stop_ = true;
  thread_.join();
  ::close(listener_);
}

void WebhookReceiver::serve() {
  while (!stop_) {
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string raw;
    char buf[8192];
    std::size_t want = std::string::npos;  // header end + Content-Length
    while (want == std::string::npos || raw.size() < want) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      raw.append(buf, static_cast<std::size_t>(n));
      const auto end = raw.find("\r\n\r\n");
      if (want == std::string::npos && end != std::string::npos) {
        std::smatch m;
        const std::string head = raw.substr(0, end);
        if (!std::regex_search(head, m,
                               std::regex("Content-Length: *([0-9]+)", std::regex::icase))) {
          break;
        }
        want = end + 4 + std::stoul(m[1].str());
      }
    }
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!::write(fd, ok.data(), ok.size());
    ::close(fd);
    const auto end = raw.find("\r\n\r\n");
    const auto sp1 = raw.find(' ');
    const auto sp2 = raw.find(' ', sp1 + 1);
    if (end == std::string::npos || sp1 == std::string::npos || sp2 == std::string::npos) {
      std::lock_guard lock(mutex_);
      errors_ += "a request that is not HTTP: " + raw.substr(0, 80) + "\n";
      continue;
    }
    take(raw.substr(sp1 + 1, sp2 - sp1 - 1), raw.substr(end + 4));
  }
}

void WebhookReceiver::take(const std::string& path, const std::string& body) {
  google::protobuf::Struct parsed;
  std::lock_guard lock(mutex_);
  if (!google::protobuf::util::JsonStringToMessage(body, &parsed).ok()) {
    errors_ += "a notification that is not JSON: " + body.substr(0, 120) + "\n";
    return;
  }
  const auto& f = parsed.fields();
  auto text_map = [](const google::protobuf::Value& v) {
    std::map<std::string, std::string> out;
    for (const auto& [k, x] : v.struct_value().fields()) out[k] = x.string_value();
    return out;
  };
  const std::size_t index = notifications_++;
  const std::string status = f.count("status") ? f.at("status").string_value() : "";
  const auto groups =
      f.count("groupLabels") ? text_map(f.at("groupLabels")) : std::map<std::string, std::string>{};
  if (!f.count("alerts")) return;
  for (const auto& a : f.at("alerts").list_value().values()) {
    const auto& af = a.struct_value().fields();
    DeliveredAlert d;
    d.receiver_path = path;
    d.notification_status = status;
    d.status = af.count("status") ? af.at("status").string_value() : "";
    if (af.count("labels")) d.labels = text_map(af.at("labels"));
    d.group_labels = groups;
    d.notification = index;
    alerts_.push_back(std::move(d));
  }
}

std::vector<DeliveredAlert> WebhookReceiver::alerts() const {
  std::lock_guard lock(mutex_);
  return alerts_;
}

std::size_t WebhookReceiver::notifications() const {
  std::lock_guard lock(mutex_);
  return notifications_;
}

std::string WebhookReceiver::text() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& a : alerts_) {
    out += "#" + std::to_string(a.notification) + " " + a.receiver_path + " " + a.status + " " +
           a.labels.at("alertname") +
           "{ramguard_job=" + (a.labels.count("ramguard_job") ? a.labels.at("ramguard_job") : "") +
           "}\n";
  }
  return out + errors_;
}

}  // namespace ramguard::testing
