#include "ramguard/base/socket_path.hpp"

#include <unistd.h>

#include <cstdlib>

#include "ramguard/base/protocol.hpp"

namespace ramguard {
namespace {

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

bool usable(const std::optional<std::string>& value) {
  return value && !value->empty();
}

}  // namespace

SocketEnvironment SocketEnvironment::current() {
  return {env_value(protocol::kSocketEnv), env_value("XDG_RUNTIME_DIR"),
          static_cast<unsigned>(::geteuid())};
}

std::string resolve_socket_path(const std::string& explicit_path, const SocketEnvironment& env) {
  if (!explicit_path.empty()) return explicit_path;
  if (usable(env.ramguard_socket)) return *env.ramguard_socket;
  if (env.uid == 0) return "/run/ramguard/ramguard.sock";
  if (usable(env.xdg_runtime_dir)) return *env.xdg_runtime_dir + "/ramguard.sock";
  return "/tmp/ramguard-" + std::to_string(env.uid) + ".sock";
}

std::string default_socket_path(const std::string& explicit_path) {
  return resolve_socket_path(explicit_path, SocketEnvironment::current());
}

}  // namespace ramguard
