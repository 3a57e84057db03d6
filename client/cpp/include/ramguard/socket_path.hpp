#pragma once
// Where the daemon's control socket is: an explicit path, else env RAMGUARD_SOCKET, else
// /run/ramguard/ramguard.sock for root, else $XDG_RUNTIME_DIR/ramguard.sock, else
// /tmp/ramguard-<uid>.sock.

#include <optional>
#include <string>

namespace ramguard {

struct SocketEnvironment {
  std::optional<std::string> ramguard_socket;  // RAMGUARD_SOCKET
  std::optional<std::string> xdg_runtime_dir;  // XDG_RUNTIME_DIR
  unsigned uid = 0;
};

// Pure: the rule above over given values (empty strings count as unset).
std::string resolve_socket_path(const std::string& explicit_path, const SocketEnvironment& env);

// The rule above over this process's environment and real UID.
std::string default_socket_path(const std::string& explicit_path = {});

}  // namespace ramguard
