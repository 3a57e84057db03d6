#pragma once
// The integration harness: the real ramguardd binary on a temp socket and state dir with
// metrics on port 0, and real child processes that allocate memory on command.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ramguard.pb.h"

namespace ramguard::testing {

using namespace std::chrono_literals;

std::filesystem::path make_temp_dir(const std::string& tag);
// A loopback TCP port free at the time of the call (bound to port 0, then released).
std::uint16_t free_loopback_port();

// A running ramguardd. Its stderr (logfmt) is captured line by line.
class Daemon {
 public:
  struct Options {
    std::string config_yaml;          // written to a file and passed with --config
    std::vector<std::string> args;    // extra flags
    std::filesystem::path state_dir;  // default: a fresh temp dir
    bool wait_ready = true;           // wait for the socket and the metrics port
    // A cgroup.procs file the daemon joins before it execs (a memory cgroup the test made), so
    // its whole life, start-up and recovery included, is charged there.
    std::filesystem::path cgroup_procs;
    std::chrono::seconds ready_timeout{20};  // a restart recovering many runs takes longer
  };
  static std::unique_ptr<Daemon> start(Options options);
  static std::unique_ptr<Daemon> with_args(std::vector<std::string> args) {
    Options o;
    o.args = std::move(args);
    return start(std::move(o));
  }
  static std::unique_ptr<Daemon> with_config(std::string yaml, std::vector<std::string> args = {}) {
    Options o;
    o.config_yaml = std::move(yaml);
    o.args = std::move(args);
    return start(std::move(o));
  }
  ~Daemon();

  pid_t pid() const { return pid_; }
  const std::filesystem::path& socket_path() const { return socket_; }
  const std::filesystem::path& state_dir() const { return state_dir_; }
  std::uint16_t metrics_port() const { return metrics_port_; }

  // One request on a fresh connection; the raw reply line.
  std::string request_line(const std::string& json_line) const;
  // Typed: fills version and parses the reply.
  v1::Reply call(v1::Request request) const;
  std::string scrape_metrics() const;

  // Waits until a log line contains `needle`; returns it (empty on timeout).
  std::string wait_for_log(const std::string& needle, std::chrono::milliseconds timeout = 10s);
  std::vector<std::string> log_lines() const;
  std::string log_text() const;

  int signal_and_wait(int signal, std::chrono::milliseconds timeout = 10s);  // exit status
  void kill_hard();                                                          // SIGKILL, reaped
  bool running();

 private:
  Daemon() = default;
  void read_stderr(int fd);

  pid_t pid_ = -1;
  std::filesystem::path dir_, socket_, state_dir_;
  std::uint16_t metrics_port_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
  std::thread reader_;
  bool exited_ = false;
  int status_ = 0;
};

// Runs a daemon to completion (e.g. --check-config); returns exit code and output.
struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::seconds timeout = 30s);

// The memchild process (tests/tools/memchild.cpp): allocates and frees on command.
class MemChild {
 public:
  MemChild();
  ~MemChild();
  pid_t pid() const { return pid_; }
  // Sends one command and returns the RSS it reports afterwards (bytes); throws on error.
  std::uint64_t command(const std::string& line);
  void kill(int signal);
  int wait();  // raw wait status

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool reaped_ = false;
};

std::string daemon_path();
std::string memchild_path();
std::string cli_path();

// Value of a metric line `name{labels} value` in a scrape; NaN when absent.
double metric_value(const std::string& scrape, const std::string& name_and_labels);

// Polls `predicate` until true or timeout.
bool eventually(const std::function<bool()>& predicate, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step = 50ms);

}  // namespace ramguard::testing
