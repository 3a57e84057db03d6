#pragma once
// Runs a piece of a test as another user: a forked child that drops every uid and gid to
// 65534 ("nobody") with no supplementary groups, so the daemon sees a different UID through
// SO_PEERCRED. Needs root.
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "harness.hpp"

namespace ramguard::testing {

inline constexpr uid_t kNobodyUid = 65534;

// A daemon whose socket an unprivileged client can reach (as a group member could). YAML
// follows the control block: indented lines add control keys, others are top-level.
inline std::unique_ptr<Daemon> daemon_open_to_all(const std::string& yaml = "") {
  auto d = Daemon::with_config("control:\n  socket_mode: \"0666\"\n" + yaml);
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  return d;
}

// Returns what `body` returned in the child; throws when the child failed.
inline std::string as_uid_nobody(const std::function<std::string()>& body) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    std::string result;
    int code = 0;
    try {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(kNobodyUid, kNobodyUid, kNobodyUid) != 0 ||
          ::setresuid(kNobodyUid, kNobodyUid, kNobodyUid) != 0) {
        result = "cannot drop privileges";
        code = 2;
      } else {
        result = body();
      }
    } catch (const std::exception& e) {
      result = std::string("exception: ") + e.what();
      code = 1;
    }
    (void)!::write(out[1], result.data(), result.size());
    ::_exit(code);
  }
  ::close(out[1]);
  std::string result;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) result.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("unprivileged client failed: " + result);
  }
  return result;
}

}  // namespace ramguard::testing
