#pragma once
// A memchild that is ramguardd's own child: a launcher process forks the memchild, then execs
// ramguardd, which so inherits it. Only for a parent does the kernel tell how a process ended
// (waitid), so this is the setup in which the daemon can name the signal that killed its target.

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "ramguard.pb.h"

namespace ramguard::testing {

class AdoptedChild {
 public:
  // Starts ramguardd (temp socket, state dir, metrics on port 0) with `config_yaml`, its log in
  // a file, and waits until it is ready. Throws when it does not become ready.
  explicit AdoptedChild(const std::string& config_yaml);
  ~AdoptedChild();
  AdoptedChild(const AdoptedChild&) = delete;
  AdoptedChild& operator=(const AdoptedChild&) = delete;

  pid_t daemon_pid() const { return daemon_pid_; }
  pid_t child_pid() const { return child_pid_; }
  // One request on a fresh connection to the daemon's socket.
  v1::Reply call(v1::Request request) const;
  // A memchild command (see tests/tools/memchild.cpp); throws on an error reply.
  std::uint64_t command(const std::string& line);
  std::string log_text() const;

 private:
  std::filesystem::path dir_, socket_, log_;
  pid_t daemon_pid_ = -1;
  pid_t child_pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
};

}  // namespace ramguard::testing
