#pragma once
// Where the control socket and the state directory go when the configuration leaves them
// empty. Pure over a snapshot of the environment, so tests can pass any user and variables.

#include <sys/types.h>

#include <optional>
#include <string>

#include "config/config.hpp"

namespace ramguard {

struct RuntimeEnv {
  uid_t uid = 0;
  std::optional<std::string> ramguard_socket;  // $RAMGUARD_SOCKET
  std::optional<std::string> xdg_runtime_dir;  // $XDG_RUNTIME_DIR
  std::optional<std::string> xdg_state_home;   // $XDG_STATE_HOME
  std::optional<std::string> home;             // $HOME
  static RuntimeEnv current();                 // this process's uid and environment
};

// control.socket when set, else $RAMGUARD_SOCKET, else /run/ramguard/ramguard.sock as root,
// else $XDG_RUNTIME_DIR/ramguard.sock, else /tmp/ramguard-UID.sock: the rule of
// ramguard/base/socket_path.hpp, which the clients use too.
std::string resolve_socket_path(const Config& config, const RuntimeEnv& env);

// state_dir when set, else /var/lib/ramguard as root, else $XDG_STATE_HOME/ramguard, else
// $HOME/.local/state/ramguard, else /tmp/ramguard-UID-state.
std::string resolve_state_dir(const Config& config, const RuntimeEnv& env);

// The configuration with both paths filled in: call once at startup, after apply_overrides.
Config with_resolved_paths(Config config, const RuntimeEnv& env);

}  // namespace ramguard
