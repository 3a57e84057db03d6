#include "config/reload.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdio>

#include "config/load.hpp"
#include "config/values.hpp"
#include "ramguard/base/units.hpp"

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

// Whether the file names the key at `keys` (nested mappings), whatever its value.
bool given(const YAML::Node& node, const std::vector<std::string>& keys, std::size_t i = 0) {
  // A missing key is an invalid node, which throws on anything but IsDefined().
  if (!node.IsDefined()) return false;
  if (i == keys.size()) return true;
  if (!node.IsMap()) return false;
  const YAML::Node child = node[keys[i]];  // const: looking up adds nothing to the node
  return given(child, keys, i + 1);
}

// A cap where 0 means none: weaker when it goes off or up.
bool cap_weaker(std::uint64_t running, std::uint64_t next) {
  return running != 0 && (next == 0 || next > running);
}

std::string cap_text(std::uint64_t value, bool bytes) {
  if (value == 0) return "0 (no cap)";
  return bytes ? format_bytes(static_cast<double>(value)) : std::to_string(value);
}

int strength(JobNames names) {
  return names == JobNames::kPlain ? 0 : names == JobNames::kHash ? 1 : 2;
}

// A budget written as a bare number under 64 MB: bytes, almost always a missing unit.
bool bare_small_budget(const YAML::Node& root, const Config& next) {
  if (next.budget_auto || next.budget_bytes >= kSmallBudgetBytes || !root.IsMap()) return false;
  const YAML::Node budget = root["budget"];
  if (!budget.IsDefined() || !budget.IsScalar()) return false;
  const std::string text = budget.Scalar();
  for (char c : text) {
    if (std::isalpha(static_cast<unsigned char>(c)) != 0 && c != 'e' && c != 'E') return false;
  }
  return true;
}

}  // namespace

Status check_reload_weakening(const Config& running, const Config& next,
                              std::string_view file_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(file_text));
  } catch (const YAML::Exception& e) {
    return Error{"cannot read the file again: " + e.msg};
  }
  if (!root.IsDefined() || root.IsNull()) {
    return Error{
        "the file is empty (half-written?): a reload with it would set every key to its "
        "default; nothing in it is applied"};
  }
  std::vector<std::string> weaker;
  const auto missing = [&](const std::vector<std::string>& keys, const std::string& from,
                           const std::string& to) {
    if (given(root, keys)) return;
    std::string key;
    for (const auto& k : keys) key += (key.empty() ? "" : ".") + k;
    weaker.push_back(key + " is not in the file, which would lower it from " + from +
                     " to the default " + to);
  };
  // A share of the budget is compared as a share: a budget the file names may move it.
  const AdmissionConfig& ra = running.admission;
  const AdmissionConfig& na = next.admission;
  const bool shares = ra.max_reserved_per_user_bytes == 0 && na.max_reserved_per_user_bytes == 0;
  const std::uint64_t reserve_running = user_reserve_cap_bytes(ra, running.budget_bytes);
  const std::uint64_t reserve_next = user_reserve_cap_bytes(na, next.budget_bytes);
  const bool reserve_weaker =
      shares ? ra.max_reserved_per_user_fraction > 0 &&
                   (na.max_reserved_per_user_fraction <= 0 ||
                    na.max_reserved_per_user_fraction > ra.max_reserved_per_user_fraction)
             : cap_weaker(reserve_running, reserve_next);
  if (reserve_weaker) {
    missing({"admission", "max_reserved_per_user"}, cap_text(reserve_running, true),
            cap_text(reserve_next, true));
  }
  if (cap_weaker(running.admission.max_active_runs_per_user,
                 next.admission.max_active_runs_per_user)) {
    missing({"admission", "max_active_runs_per_user"},
            cap_text(running.admission.max_active_runs_per_user, false),
            cap_text(next.admission.max_active_runs_per_user, false));
  }
  if (strength(next.metrics.job_names) < strength(running.metrics.job_names)) {
    missing({"metrics", "job_names"}, job_names_name(running.metrics.job_names),
            job_names_name(next.metrics.job_names));
  }
  if (running.control.peers_read == PeersRead::kOwn && next.control.peers_read == PeersRead::kAll) {
    missing({"control", "peers_read"}, "own", "all");
  }
  if (next.admission.lease < running.admission.lease) {
    missing({"admission", "lease"}, format_duration(running.admission.lease),
            format_duration(next.admission.lease));
  }
  if (!next.budget_auto && !running.budget_auto && next.budget_bytes > running.budget_bytes) {
    missing({"budget"}, format_bytes(static_cast<double>(running.budget_bytes)),
            format_bytes(static_cast<double>(next.budget_bytes)));
  }
  if (bare_small_budget(root, next)) {
    weaker.push_back("budget " + std::to_string(next.budget_bytes) +
                     " is bytes, under 64 MB (a unit missing?); write it with its unit, e.g. " +
                     std::to_string(next.budget_bytes) + "MB, to mean it");
  }
  if (weaker.empty()) return ok_status();
  std::string message = "it would weaken the guard: ";
  for (std::size_t i = 0; i < weaker.size(); ++i) message += (i ? "; " : "") + weaker[i];
  message += " (a truncated file? name a key to change it)";
  return Error{message, ErrorKind::kFailedPrecondition};
}

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
  if (next.store.coalesce_wal_writes != running.store.coalesce_wal_writes) {
    out.push_back(change("store.coalesce_wal_writes",
                         running.store.coalesce_wal_writes ? "true" : "false",
                         next.store.coalesce_wal_writes ? "true" : "false"));
  }
  if (next.metrics.listen != running.metrics.listen) {
    out.push_back(change("metrics.listen", running.metrics.listen.to_string(),
                         next.metrics.listen.to_string()));
  }
  return out;
}

Result<Config> reload(const Config& current, const std::filesystem::path& path,
                      const CommandLine& flags, std::vector<std::string>* notes) {
  auto text = read_config_file(path);
  if (!text) return text.error();
  auto loaded = parse_config_yaml(*text, path.string());
  if (!loaded.ok()) return loaded.error();
  Config next = apply_overrides(std::move(loaded).value(), flags);
  if (Status valid = validate_config(next, path.string()); !valid.ok()) return valid.error();
  if (Status kept = check_reload_weakening(current, next, *text); !kept) {
    return Error{path.string() + ": " + kept.error().message, kept.error().kind};
  }
  if (notes != nullptr) *notes = restart_required_changes(current, next);
  next.state_dir = current.state_dir;
  next.control.socket = current.control.socket;
  next.control.socket_mode = current.control.socket_mode;
  next.control.socket_group = current.control.socket_group;
  next.control.tcp = current.control.tcp;
  next.metrics.listen = current.metrics.listen;
  next.store.coalesce_wal_writes = current.store.coalesce_wal_writes;
  return next;
}

}  // namespace ramguard
