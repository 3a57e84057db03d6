#pragma once
// Where the daemon's control socket is, one rule for the daemon and every client:
//   an explicit path (--socket, control.socket), else $RAMGUARD_SOCKET,
//   else /run/ramguard/ramguard.sock when the effective UID is 0,
//   else $XDG_RUNTIME_DIR/ramguard.sock, else /tmp/ramguard-<effective UID>.sock.
// Empty strings count as unset.
//
// The effective UID, not the real one: the daemon creates the socket, and the kernel checks a
// client's connect(), with effective credentials. A setuid helper or a process that switched its
// effective UID acts as that user, so it must look where a daemon of that user listens; with
// getuid() a setuid-root tool run by UID 1000 would look in /tmp/ramguard-1000.sock while the
// root daemon listens in /run/ramguard.

#include <optional>
#include <string>

namespace ramguard {

struct SocketEnvironment {
  std::optional<std::string> ramguard_socket;  // $RAMGUARD_SOCKET
  std::optional<std::string> xdg_runtime_dir;  // $XDG_RUNTIME_DIR
  unsigned uid = 0;                            // effective UID
  static SocketEnvironment current();          // this process's environment and geteuid()
};

// Pure: the rule above over given values.
std::string resolve_socket_path(const std::string& explicit_path, const SocketEnvironment& env);

// The rule above over this process's environment and effective UID.
std::string default_socket_path(const std::string& explicit_path = {});

}  // namespace ramguard
