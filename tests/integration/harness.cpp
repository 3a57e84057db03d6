#include "harness.hpp"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ramguard::testing {
namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (auto& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

std::string field_after(const std::string& line, const std::string& key) {
  const auto pos = line.find(key + "=");
  if (pos == std::string::npos) return "";
  const auto start = pos + key.size() + 1;
  return line.substr(start, line.find(' ', start) - start);
}

}  // namespace

std::string daemon_path() {
  return RAMGUARD_DAEMON_PATH;
}
std::string memchild_path() {
  return RAMGUARD_MEMCHILD_PATH;
}
std::string cli_path() {
  return RAMGUARD_CLI_PATH;
}

std::filesystem::path make_temp_dir(const std::string& tag) {
  std::string templ = (std::filesystem::temp_directory_path() / ("rg-" + tag + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return templ;
}

std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("no free loopback port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool eventually(const std::function<bool()>& predicate, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(step);
  }
  return predicate();
}

std::unique_ptr<Daemon> Daemon::start(Options options) {
  std::unique_ptr<Daemon> d(new Daemon());
  d->dir_ = make_temp_dir("daemon");
  d->socket_ = d->dir_ / "ramguard.sock";
  d->state_dir_ = options.state_dir.empty() ? d->dir_ / "state" : options.state_dir;
  std::vector<std::string> args = {
      daemon_path(),          "--socket",  d->socket_.string(), "--state-dir",
      d->state_dir_.string(), "--metrics", "127.0.0.1:0"};
  if (!options.config_yaml.empty()) {
    const auto config = d->dir_ / "ramguard.yaml";
    std::ofstream(config) << options.config_yaml;
    args.insert(args.begin() + 1, {"--config", config.string()});
  }
  for (auto& a : options.args) args.push_back(a);
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  d->pid_ = ::fork();
  if (d->pid_ == 0) {
    ::dup2(err[1], 2);
    ::dup2(err[1], 1);
    if (!options.cgroup_procs.empty()) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      const int fd = ::open(options.cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) {
        ::_exit(126);
      }
      ::close(fd);
    }
    auto argv = c_argv(args);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(err[1]);
  d->reader_ = std::thread([raw = d.get(), fd = err[0]] { raw->read_stderr(fd); });
  if (options.wait_ready) {
    const std::string ready = d->wait_for_log("event=daemon.ready", options.ready_timeout);
    if (ready.empty()) throw std::runtime_error("daemon did not become ready:\n" + d->log_text());
    d->metrics_port_ = static_cast<std::uint16_t>(std::stoi(field_after(ready, "metrics_port")));
  }
  return d;
}

void Daemon::read_stderr(int fd) {
  std::string pending;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::lock_guard lock(mutex_);
      lines_.push_back(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
  }
  std::lock_guard lock(mutex_);
  if (!pending.empty()) lines_.push_back(pending);
  ::close(fd);
}

Daemon::~Daemon() {
  if (running()) signal_and_wait(SIGTERM);
  if (running()) kill_hard();
  if (reader_.joinable()) reader_.join();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool Daemon::running() {
  if (exited_ || pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    exited_ = true;
    status_ = status;
    return false;
  }
  return true;
}

int Daemon::signal_and_wait(int signal, std::chrono::milliseconds timeout) {
  if (!running()) return status_;
  ::kill(pid_, signal);
  eventually([this] { return !running(); }, timeout, 20ms);
  return status_;
}

void Daemon::kill_hard() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status_, 0);
  exited_ = true;
}

std::string Daemon::wait_for_log(const std::string& needle, std::chrono::milliseconds timeout) {
  std::string found;
  eventually(
      [&] {
        std::lock_guard lock(mutex_);
        for (const auto& line : lines_) {
          if (line.find(needle) != std::string::npos) {
            found = line;
            return true;
          }
        }
        return false;
      },
      timeout, 20ms);
  return found;
}

std::vector<std::string> Daemon::log_lines() const {
  std::lock_guard lock(mutex_);
  return lines_;
}

std::string Daemon::log_text() const {
  std::string out;
  for (const auto& l : log_lines()) out += l + "\n";
  return out;
}

std::string Daemon::request_line(const std::string& json_line) const {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to " + socket_.string());
  }
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string line = json_line + "\n";
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    ::close(fd);
    throw std::runtime_error("short write");
  }
  std::string reply;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') reply += c;
  ::close(fd);
  return reply;
}

v1::Reply Daemon::call(v1::Request request) const {
  if (request.version() == 0) request.set_version(1);
  std::string line;
  (void)google::protobuf::util::MessageToJsonString(request, &line);
  v1::Reply reply;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const std::string raw = request_line(line);
  if (!google::protobuf::util::JsonStringToMessage(raw, &reply, options).ok()) {
    throw std::runtime_error("unparseable reply: " + raw);
  }
  return reply;
}

std::string Daemon::scrape_metrics() const {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(metrics_port_);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect to metrics port " + std::to_string(metrics_port_));
  }
  const std::string req =
      "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string response = read_all(fd);
  ::close(fd);
  const auto body = response.find("\r\n\r\n");
  return body == std::string::npos ? response : response.substr(body + 4);
}

CommandResult run_command(const std::vector<std::string>& argv_in, std::chrono::seconds timeout) {
  std::vector<std::string> args = argv_in;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    auto argv = c_argv(args);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  CommandResult result;
  std::thread reader([&] { result.output = read_all(out[0]); });
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  reader.join();
  ::close(out[0]);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

MemChild::MemChild() {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    const std::string path = memchild_path();
    ::execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
}

MemChild::~MemChild() {
  ::close(to_child_);
  ::close(from_child_);
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::uint64_t MemChild::command(const std::string& line) {
  const std::string msg = line + "\n";
  if (::write(to_child_, msg.data(), msg.size()) != static_cast<ssize_t>(msg.size())) {
    throw std::runtime_error("memchild: write failed");
  }
  std::string reply;
  char c;
  while (::read(from_child_, &c, 1) == 1 && c != '\n') reply += c;
  if (reply.rfind("ok ", 0) != 0) throw std::runtime_error("memchild: '" + line + "' -> " + reply);
  return std::stoull(reply.substr(3));
}

void MemChild::kill(int signal) {
  ::kill(pid_, signal);
}

int MemChild::wait() {
  int status = 0;
  ::waitpid(pid_, &status, 0);
  reaped_ = true;
  return status;
}

double metric_value(const std::string& scrape, const std::string& name_and_labels) {
  std::istringstream in(scrape);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name_and_labels + " ", 0) == 0) {
      return std::stod(line.substr(name_and_labels.size() + 1));
    }
  }
  return std::nan("");
}

}  // namespace ramguard::testing
