#include "step_options.hpp"

#include <cctype>

#include "ramguard/units.hpp"

namespace ramguard::slurm {
namespace {

Result<std::chrono::milliseconds> parse_millis(std::string_view key, std::string_view text) {
  const auto parsed = units::parse_duration(text);
  if (!parsed) return Error{std::string(key) + "=" + std::string(text) + ": " + parsed.error};
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(*parsed.value);
  if (millis.count() <= 0 || millis > std::chrono::minutes(1)) {
    return Error{std::string(key) + "=" + std::string(text) +
                 ": expected a duration from 1ms to 1m (slurmstepd waits on it)"};
  }
  return millis;
}

Status parse_count(std::string_view name, std::string_view value, std::uint32_t& out) {
  const auto parsed = units::parse_count(value, 1'000'000);
  if (!parsed) return Error{"--ramguard-" + std::string(name) + ": " + parsed.error};
  out = static_cast<std::uint32_t>(*parsed.value);
  return ok_status();
}

Status parse_size(std::string_view name, std::string_view value, std::uint64_t& out) {
  const auto parsed = units::parse_size(value);
  if (!parsed) return Error{"--ramguard-" + std::string(name) + ": " + parsed.error};
  out = *parsed.value;
  return ok_status();
}

}  // namespace

Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args) {
  PluginConfig config;
  for (const std::string& arg : args) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos) {
      return Error{"plugstack.conf argument '" + arg +
                   "': expected KEY=VALUE (socket=, default_plan=, required=, timeout=, "
                   "verdict_wait=)"};
    }
    const std::string_view key = std::string_view(arg).substr(0, eq);
    const std::string_view value = std::string_view(arg).substr(eq + 1);
    if (key == "socket") {
      config.socket_path = value;
    } else if (key == "default_plan") {
      config.default_plan = value;
    } else if (key == "required") {
      if (value == "yes") {
        config.required = true;
      } else if (value == "no") {
        config.required = false;
      } else {
        return Error{"plugstack.conf argument required=" + std::string(value) +
                     ": expected yes or no"};
      }
    } else if (key == "timeout") {
      auto millis = parse_millis(key, value);
      if (!millis) return millis.error();
      config.timeout = *millis;
    } else if (key == "verdict_wait") {
      auto millis = parse_millis(key, value);
      if (!millis) return millis.error();
      config.verdict_wait = *millis;
    } else {
      return Error{"plugstack.conf argument '" + arg +
                   "': unknown key (socket, default_plan, required, timeout, verdict_wait)"};
    }
  }
  return config;
}

Status set_step_option(StepRequest& request, std::string_view name, std::string_view value) {
  if (name == "estimate") return parse_size(name, value, request.estimate_bytes);
  if (name == "model") return parse_size(name, value, request.model_bytes);
  if (name == "hosts") return parse_count(name, value, request.hosts);
  if (name == "rounds") return parse_count(name, value, request.rounds);
  if (name == "plan") {
    if (value.empty()) return Error{"--ramguard-plan: a plan name is required"};
    request.plan = value;
    return ok_status();
  }
  if (name == "scope") {
    if (value != "process" && value != "tree" && value != "cgroup") {
      return Error{"--ramguard-scope=" + std::string(value) + ": expected process, tree or cgroup"};
    }
    request.scope = value;
    return ok_status();
  }
  if (name == "job") {
    if (value.empty() || value.size() > 128) {
      return Error{"--ramguard-job: expected a name of 1 to 128 characters"};
    }
    request.job = value;
    return ok_status();
  }
  return Error{"unknown ramguard option '" + std::string(name) + "'"};
}

std::string option_env_name(std::string_view name) {
  std::string out = "SLURM_SPANK_RAMGUARD_";
  for (const char c : name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace ramguard::slurm
