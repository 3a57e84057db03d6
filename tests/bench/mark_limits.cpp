#include "bench/mark_limits.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

namespace ramguard::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kLineBytes = 160;  // about a mark request
constexpr std::size_t kAppendBytes = 3 * 4096;
constexpr off_t kLogWrapBytes = 64L << 20;  // a log that restarts, as the WAL does

double ns_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

sockaddr_un unix_address(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  return addr;
}

int listen_on(const std::filesystem::path& path, int backlog) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un addr = unix_address(path);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, backlog) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_to(const std::filesystem::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un addr = unix_address(path);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A line there and back on a connected socket; false when the peer went away.
bool round_trip(int fd) {
  char line[kLineBytes];
  std::memset(line, 'x', sizeof line);
  if (::write(fd, line, sizeof line) != static_cast<ssize_t>(sizeof line)) return false;
  std::size_t got = 0;
  while (got < sizeof line) {
    const ssize_t n = ::read(fd, line + got, sizeof line - got);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// A one-connection echo thread.
class EchoServer {
 public:
  explicit EchoServer(const std::filesystem::path& path) : listener_(listen_on(path, 1)) {
    if (listener_ < 0) return;
    thread_ = std::thread([this] {
      const int fd = ::accept(listener_, nullptr, nullptr);
      char buf[512];
      ssize_t n;
      while (fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0) {
        if (::write(fd, buf, static_cast<std::size_t>(n)) != n) break;
      }
      if (fd >= 0) ::close(fd);
    });
    client_ = connect_to(path);
  }
  ~EchoServer() {
    if (client_ >= 0) ::close(client_);  // the echo thread sees EOF
    if (thread_.joinable()) thread_.join();
    if (listener_ >= 0) ::close(listener_);
  }
  int client() const { return client_; }

 private:
  int listener_ = -1;
  int client_ = -1;
  std::thread thread_;
};

// A target's two files a mark touches, kept open as the daemon keeps them.
struct TargetFiles {
  explicit TargetFiles(pid_t pid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    status = ::open((proc + "/status").c_str(), O_RDONLY | O_CLOEXEC);
    clear_refs = ::open((proc + "/clear_refs").c_str(), O_WRONLY | O_CLOEXEC);
  }
  ~TargetFiles() {
    for (int fd : {status, clear_refs}) {
      if (fd >= 0) ::close(fd);
    }
  }
  TargetFiles(const TargetFiles&) = delete;
  TargetFiles& operator=(const TargetFiles&) = delete;
  bool ok() const { return status >= 0 && clear_refs >= 0; }
  void peak_read_and_reset() const {
    char buf[4096];
    (void)!::pread(status, buf, sizeof buf, 0);
    (void)!::write(clear_refs, "5", 1);
  }
  int status = -1;
  int clear_refs = -1;
};

class Log {
 public:
  explicit Log(const std::filesystem::path& path)
      : path_(path), fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) {}
  ~Log() {
    if (fd_ >= 0) ::close(fd_);
    std::filesystem::remove(path_);
  }
  bool ok() const { return fd_ >= 0; }
  void append(bool sync) {
    (void)!::pwrite(fd_, pages_.data(), pages_.size(), at_);
    at_ = (at_ + static_cast<off_t>(pages_.size())) % kLogWrapBytes;
    if (sync) ::fdatasync(fd_);
  }

 private:
  std::filesystem::path path_;
  int fd_;
  std::string pages_ = std::string(kAppendBytes, 'w');
  off_t at_ = 0;
};

}  // namespace

std::vector<double> echo_round_trips(const std::filesystem::path& dir, int count) {
  EchoServer echo(dir / "echo.sock");
  std::vector<double> ns;
  for (int i = 0; echo.client() >= 0 && i < count; ++i) {
    const auto t0 = Clock::now();
    if (!round_trip(echo.client())) break;
    ns.push_back(ns_since(t0));
  }
  return ns;
}

std::vector<double> acknowledged_marks(const std::filesystem::path& dir,
                                       const std::filesystem::path& state_dir, pid_t target,
                                       int count, bool fdatasync) {
  EchoServer echo(dir / (fdatasync ? "ack-sync.sock" : "ack.sock"));
  const TargetFiles files(target);
  Log log(state_dir / "ack-probe");
  std::vector<double> ns;
  for (int i = 0; echo.client() >= 0 && files.ok() && log.ok() && i < count; ++i) {
    const auto t0 = Clock::now();
    if (!round_trip(echo.client())) break;
    files.peak_read_and_reset();
    log.append(fdatasync);
    ns.push_back(ns_since(t0));
  }
  return ns;
}

ConcurrentLimit concurrent_acknowledged_marks(const std::filesystem::path& dir,
                                              const std::filesystem::path& state_dir,
                                              const std::vector<pid_t>& targets, int count) {
  const std::filesystem::path socket = dir / ("ack-" + std::to_string(targets.size()) + ".sock");
  const int listener = listen_on(socket, static_cast<int>(targets.size()));
  Log log(state_dir / "ack-many-probe");
  ConcurrentLimit out;
  if (listener < 0 || !log.ok()) return out;

  // The server: accepts every client first (client i's target is targets[i]), then serves.
  std::thread server([&] {
    const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
    std::vector<int> fds;
    std::vector<std::unique_ptr<TargetFiles>> files;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev);
      fds.push_back(fd);
      files.push_back(std::make_unique<TargetFiles>(targets[i]));
    }
    std::vector<std::size_t> ready;
    std::size_t open = fds.size();
    char buf[kLineBytes];
    epoll_event events[128];
    while (open > 0) {
      const int n = ::epoll_wait(epoll, events, 128, -1);
      ready.clear();
      for (int e = 0; e < n; ++e) {
        const std::size_t i = events[e].data.u64;
        const ssize_t got = ::read(fds[i], buf, sizeof buf);  // a line arrives whole here
        if (got <= 0) {
          ::epoll_ctl(epoll, EPOLL_CTL_DEL, fds[i], nullptr);
          --open;
          continue;
        }
        files[i]->peak_read_and_reset();
        ready.push_back(i);
      }
      if (ready.empty()) continue;
      log.append(false);  // the turn's records, once, before any reply
      for (std::size_t i : ready) (void)!::write(fds[i], buf, kLineBytes);
    }
    for (int fd : fds) ::close(fd);
    ::close(epoll);
  });

  std::atomic<bool> go{false};
  std::vector<std::vector<double>> per_client(targets.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const int fd = connect_to(socket);  // in order: the server's i-th accept is this client
    clients.emplace_back([&, fd, i] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      auto& ns = per_client[i];
      ns.reserve(static_cast<std::size_t>(count));
      for (int k = 0; fd >= 0 && k < count; ++k) {
        const auto t0 = Clock::now();
        if (!round_trip(fd)) break;
        ns.push_back(ns_since(t0));
      }
      if (fd >= 0) ::close(fd);
    });
  }
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& c : clients) c.join();
  const double seconds = ns_since(t0) / 1e9;
  server.join();
  ::close(listener);
  for (const auto& ns : per_client) out.ns.insert(out.ns.end(), ns.begin(), ns.end());
  out.per_second = seconds > 0 ? static_cast<double>(out.ns.size()) / seconds : 0;
  return out;
}

}  // namespace ramguard::testing
