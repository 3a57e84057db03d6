#include "ramguard/socket_path.hpp"

#include <unistd.h>

#include <cstdlib>

namespace ramguard {
namespace {

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

std::string resolve_socket_path(const std::string& explicit_path, const SocketEnvironment& env) {
  if (!explicit_path.empty()) return explicit_path;
  if (env.ramguard_socket && !env.ramguard_socket->empty()) return *env.ramguard_socket;
  if (env.uid == 0) return "/run/ramguard/ramguard.sock";
  if (env.xdg_runtime_dir && !env.xdg_runtime_dir->empty()) {
    return *env.xdg_runtime_dir + "/ramguard.sock";
  }
  return "/tmp/ramguard-" + std::to_string(env.uid) + ".sock";
}

std::string default_socket_path(const std::string& explicit_path) {
  return resolve_socket_path(
      explicit_path, SocketEnvironment{env_value("RAMGUARD_SOCKET"), env_value("XDG_RUNTIME_DIR"),
                                       static_cast<unsigned>(::getuid())});
}

}  // namespace ramguard
