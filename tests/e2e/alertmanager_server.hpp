#pragma once
// A real Alertmanager for tests: Debian's `prometheus-alertmanager` on a free loopback port,
// clustering off, a temporary storage directory; and the webhook receiver it delivers to, a
// tiny HTTP server run by the test that keeps every notification.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ramguard::testing {

class ServedBinary;

class AlertmanagerServer {
 public:
  // Starts it with `config_yaml`; waits until ready. Throws std::runtime_error naming what failed.
  explicit AlertmanagerServer(const std::string& config_yaml);
  ~AlertmanagerServer();
  AlertmanagerServer(const AlertmanagerServer&) = delete;
  AlertmanagerServer& operator=(const AlertmanagerServer&) = delete;
  std::uint16_t port() const { return port_; }
  std::string log() const;

 private:
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ServedBinary> server_;
};

// One alert of one delivered notification.
struct DeliveredAlert {
  std::string receiver_path;        // the URL path the route's receiver posts to, e.g. "/critical"
  std::string notification_status;  // "firing" or "resolved"
  std::string status;               // the alert's own
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> group_labels;
  std::size_t notification = 0;  // index of the notification it came in
};

class WebhookReceiver {
 public:
  WebhookReceiver();  // listens on a free loopback port at once
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;
  std::uint16_t port() const { return port_; }
  std::vector<DeliveredAlert> alerts() const;
  std::size_t notifications() const;
  std::string text() const;  // everything received, for failure messages

 private:
  void serve();
  void take(const std::string& path, const std::string& body);

  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<DeliveredAlert> alerts_;
  std::size_t notifications_ = 0;
  std::string errors_;
  std::thread thread_;
};

// The shipped Alertmanager configuration with every webhook URL's scheme and host replaced by
// 127.0.0.1:`port` (paths kept) and its waits shortened for a test.
std::string alertmanager_config_for_test(const std::string& shipped_yaml, std::uint16_t port,
                                         const std::string& group_wait,
                                         const std::string& group_interval);

}  // namespace ramguard::testing
