#include "adopted_child.hpp"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "harness.hpp"

namespace ramguard::testing {

AdoptedChild::AdoptedChild(const std::string& config_yaml) {
  dir_ = make_temp_dir("adopted");
  socket_ = dir_ / "ramguard.sock";
  log_ = dir_ / "daemon.log";
  const auto config = dir_ / "ramguard.yaml";
  std::ofstream(config) << config_yaml;
  std::vector<std::string> args = {
      daemon_path(),    "--config",    config.string(),           "--socket",
      socket_.string(), "--state-dir", (dir_ / "state").string(), "--metrics",
      "127.0.0.1:0"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string child_path = memchild_path();
  const std::string log_path = log_.string();

  int in[2], out[2], pid_pipe[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
      ::pipe2(pid_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  daemon_pid_ = ::fork();
  if (daemon_pid_ == 0) {
    // The launcher: fork the memchild first, then become ramguardd, its parent.
    const pid_t child = ::fork();
    if (child == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::execl(child_path.c_str(), child_path.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    (void)!::write(pid_pipe[1], &child, sizeof child);
    const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(pid_pipe[1]);
  if (::read(pid_pipe[0], &child_pid_, sizeof child_pid_) != sizeof child_pid_) child_pid_ = -1;
  ::close(pid_pipe[0]);
  to_child_ = in[1];
  from_child_ = out[0];
  if (child_pid_ <= 0 ||
      !eventually([&] { return log_text().find("event=daemon.ready") != std::string::npos; },
                  20s)) {
    throw std::runtime_error("adopting daemon did not become ready:\n" + log_text());
  }
}

AdoptedChild::~AdoptedChild() {
  ::close(to_child_);
  ::close(from_child_);
  if (child_pid_ > 0) ::kill(child_pid_, SIGKILL);
  ::kill(daemon_pid_, SIGTERM);
  int status = 0;
  if (!eventually([&] { return ::waitpid(daemon_pid_, &status, WNOHANG) == daemon_pid_; }, 10s)) {
    ::kill(daemon_pid_, SIGKILL);
    ::waitpid(daemon_pid_, &status, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

v1::Reply AdoptedChild::call(v1::Request request) const {
  if (request.version() == 0) request.set_version(1);
  std::string line;
  (void)google::protobuf::util::MessageToJsonString(request, &line);
  line += "\n";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    ::close(fd);
    throw std::runtime_error("cannot talk to " + socket_.string());
  }
  std::string raw;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') raw += c;
  ::close(fd);
  v1::Reply reply;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(raw, &reply, options).ok()) {
    throw std::runtime_error("unparseable reply: " + raw);
  }
  return reply;
}

std::uint64_t AdoptedChild::command(const std::string& line) {
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

std::string AdoptedChild::log_text() const {
  std::ifstream in(log_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace ramguard::testing
