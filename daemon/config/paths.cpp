#include "config/paths.hpp"

#include <unistd.h>

#include <cstdlib>

#include "ramguard/base/protocol.hpp"
#include "ramguard/base/socket_path.hpp"

namespace ramguard {
namespace {

std::optional<std::string> env_var(const char* name) {
  const char* value = std::getenv(name);
  // An empty variable is as good as unset: "" is no directory.
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool usable(const std::optional<std::string>& dir) {
  return dir && !dir->empty();
}

}  // namespace

RuntimeEnv RuntimeEnv::current() {
  // The effective UID, as the socket rule says why (ramguard/base/socket_path.hpp).
  return {::geteuid(), env_var(protocol::kSocketEnv), env_var("XDG_RUNTIME_DIR"),
          env_var("XDG_STATE_HOME"), env_var("HOME")};
}

std::string resolve_socket_path(const Config& config, const RuntimeEnv& env) {
  return resolve_socket_path(
      config.control.socket,
      SocketEnvironment{env.ramguard_socket, env.xdg_runtime_dir, static_cast<unsigned>(env.uid)});
}

std::string resolve_state_dir(const Config& config, const RuntimeEnv& env) {
  if (!config.state_dir.empty()) return config.state_dir;
  if (env.uid == 0) return "/var/lib/ramguard";
  if (usable(env.xdg_state_home)) return *env.xdg_state_home + "/ramguard";
  if (usable(env.home)) return *env.home + "/.local/state/ramguard";
  return "/tmp/ramguard-" + std::to_string(env.uid) + "-state";
}

Config with_resolved_paths(Config config, const RuntimeEnv& env) {
  config.control.socket = resolve_socket_path(config, env);
  config.state_dir = resolve_state_dir(config, env);
  return config;
}

}  // namespace ramguard
