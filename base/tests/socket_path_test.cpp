// One socket path rule, over the effective UID.
#include "ramguard/base/socket_path.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace ramguard {
namespace {

TEST(SocketPath, FollowsTheDocumentedOrder) {
  SocketEnvironment env{"/env/ramguard.sock", "/run/user/1000", 1000};
  EXPECT_EQ(resolve_socket_path("/flag.sock", env), "/flag.sock");
  EXPECT_EQ(resolve_socket_path("", env), "/env/ramguard.sock");
  env.ramguard_socket = "";  // empty counts as unset
  EXPECT_EQ(resolve_socket_path("", env), "/run/user/1000/ramguard.sock");
  env.xdg_runtime_dir.reset();
  EXPECT_EQ(resolve_socket_path("", env), "/tmp/ramguard-1000.sock");
  env.uid = 0;
  env.xdg_runtime_dir = "/run/user/0";
  EXPECT_EQ(resolve_socket_path("", env), "/run/ramguard/ramguard.sock");
}

// Real UID 0, effective UID 65534 (in a forked child, so this process keeps its identity): the
// path is the effective user's. As a user that cannot switch, the effective UID is still the one
// in the path.
TEST(SocketPath, UsesTheEffectiveUid) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::unsetenv("RAMGUARD_SOCKET");
    ::unsetenv("XDG_RUNTIME_DIR");
    unsigned expected_uid = ::geteuid();
    if (::getuid() == 0) {
      if (::seteuid(65534) != 0) ::_exit(3);
      expected_uid = 65534;
    }
    const std::string expected = expected_uid == 0
                                     ? "/run/ramguard/ramguard.sock"
                                     : "/tmp/ramguard-" + std::to_string(expected_uid) + ".sock";
    if (SocketEnvironment::current().uid != expected_uid) ::_exit(4);
    ::_exit(default_socket_path() == expected ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: seteuid failed, 4: wrong uid, 5: wrong path";
}

}  // namespace
}  // namespace ramguard
