#pragma once
// Where the daemon's control socket is. The rule (and why it uses the effective UID) lives in
// the base the daemon and the clients share: ramguard/base/socket_path.hpp, installed with
// libramguard.
//   ramguard::default_socket_path(explicit_path)      this process's environment
//   ramguard::resolve_socket_path(explicit_path, env) the same over given values

#include "ramguard/base/socket_path.hpp"
