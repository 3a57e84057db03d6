#include "config/reload.hpp"

#include <cstdio>

#include "config/load.hpp"
#include "config/values.hpp"

namespace ramguard {
namespace {

std::string change(const std::string& key, const std::string& from, const std::string& to) {
  return key + ": '" + from + "' -> '" + to + "' takes effect after a restart; still using '" +
         from + "'";
}

std::string mode_text(std::uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

std::string tcp_text(const TcpConfig& tcp) {
  return std::string(tcp.enabled ? "enabled" : "disabled") + " on " + tcp.listen.to_string() +
         (tcp.token_file.empty() ? "" : ", token " + tcp.token_file);
}

}  // namespace

std::vector<std::string> restart_required_changes(const Config& running, const Config& next) {
  std::vector<std::string> out;
  if (!next.state_dir.empty() && next.state_dir != running.state_dir) {
    out.push_back(change("state_dir", running.state_dir, next.state_dir));
  }
  if (!next.control.socket.empty() && next.control.socket != running.control.socket) {
    out.push_back(change("control.socket", running.control.socket, next.control.socket));
  }
  if (next.control.socket_mode != running.control.socket_mode) {
    out.push_back(change("control.socket_mode", mode_text(running.control.socket_mode),
                         mode_text(next.control.socket_mode)));
  }
  if (next.control.socket_group != running.control.socket_group) {
    out.push_back(
        change("control.socket_group", running.control.socket_group, next.control.socket_group));
  }
  if (next.control.tcp != running.control.tcp) {
    out.push_back(change("control.tcp", tcp_text(running.control.tcp), tcp_text(next.control.tcp)));
  }
  if (next.admission.history != running.admission.history) {
    out.push_back(change("admission.history", running.admission.history.prometheus_url,
                         next.admission.history.prometheus_url));
  }
  if (next.metrics.listen != running.metrics.listen) {
    out.push_back(change("metrics.listen", running.metrics.listen.to_string(),
                         next.metrics.listen.to_string()));
  }
  return out;
}

Result<Config> reload(const Config& current, const std::filesystem::path& path,
                      const CommandLine& flags, std::vector<std::string>* notes) {
  auto loaded = load_config_file(path);
  if (!loaded.ok()) return loaded.error();
  Config next = apply_overrides(std::move(loaded).value(), flags);
  if (Status valid = validate_config(next, path.string()); !valid.ok()) return valid.error();
  if (notes != nullptr) *notes = restart_required_changes(current, next);
  next.state_dir = current.state_dir;
  next.control.socket = current.control.socket;
  next.control.socket_mode = current.control.socket_mode;
  next.control.socket_group = current.control.socket_group;
  next.control.tcp = current.control.tcp;
  next.metrics.listen = current.metrics.listen;
  return next;
}

}  // namespace ramguard
