#include "app/daemon_config.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "config/auto_budget.hpp"
#include "config/describe.hpp"
#include "config/load.hpp"
#include "config/paths.hpp"
#include "config/reload.hpp"
#include "runs/params_from_config.hpp"

namespace ramguard {
namespace {

// What every path shares after the file and flags: `budget: auto` and the daemon's rules.
Result<Config> usable(Result<Config> config, std::string_view source_name) {
  if (config) config = with_auto_budget(std::move(*config));
  if (!config) return config;
  if (auto ok = validate_for_daemon(*config, source_name); !ok) return ok.error();
  return config;
}

}  // namespace

Result<Config> startup_config(const CommandLine& flags) {
  Config config = default_config();
  if (flags.config_path) {
    auto loaded = load_config_file(*flags.config_path);
    if (!loaded) return loaded.error();
    config = std::move(*loaded);
  }
  auto result =
      usable(apply_overrides(std::move(config), flags), flags.config_path.value_or("flags"));
  if (!result) return result;
  return with_resolved_paths(std::move(*result), RuntimeEnv::current());
}

Result<Config> checked_config_file(const std::filesystem::path& path) {
  auto loaded = load_config_file(path);
  if (!loaded) return loaded;
  auto resolved = with_auto_budget(std::move(*loaded));
  if (!resolved) return Error{path.string() + ": " + resolved.error().message};
  if (auto ok = validate_for_daemon(*resolved, path.string()); !ok) return ok.error();
  return resolved;
}

Result<Config> reloaded_config(const Config& running, const std::filesystem::path& path,
                               const CommandLine& flags, std::vector<std::string>* notes) {
  return usable(reload(running, path, flags, notes), path.string());
}

std::string compared_with_running(const Config& checked) {
  const std::filesystem::path running =
      std::filesystem::path(resolve_state_dir(checked, RuntimeEnv::current())) / kRunningConfigFile;
  std::ifstream in(running);
  if (!in) {
    return "no running configuration at " + running.string() +
           " (no daemon with this state dir, or not readable): nothing to compare\n";
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto diff = config_differences(text, settings_text(checked));
  std::string out = "compared with the running configuration (" + running.string() + "): ";
  out += diff.empty()
             ? std::string("no difference")
             : std::to_string(diff.size()) + (diff.size() == 1 ? " difference" : " differences");
  out += "\n";
  for (const auto& d : diff) out += "  " + d + "\n";
  return out;
}

std::string small_budget_warning(const Config& config) {
  if (config.budget_bytes >= kSmallBudgetBytes) return {};
  return "budget " + std::to_string(config.budget_bytes) +
         " bytes is under 64 MB: a size without a unit is bytes; write 16GB (16e9 bytes) or "
         "16GiB (2^34 bytes)";
}

DeskSettings desk_settings(const Config& c) {
  return {c.plans, c.admission.use_calibrated, c.admission.calibration_factor, c.control.peers_read,
          c.admission.trusted_uids};
}

}  // namespace ramguard
