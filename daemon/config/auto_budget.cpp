#include "config/auto_budget.hpp"

#include "procfs/meminfo.hpp"
#include "ramguard/base/units.hpp"

namespace ramguard {

Result<Config> with_auto_budget(Config config, const std::filesystem::path& proc_root) {
  if (!config.budget_auto) return config;
  auto reader = MeminfoReader::open(proc_root);
  if (!reader) return Error{"budget auto: " + reader.error().message};
  auto node = reader->read();
  if (!node) return Error{"budget auto: " + node.error().message};
  if (config.system_reserve_bytes >= node->total_bytes) {
    return Error{"budget auto: system_reserve " + format_bytes(config.system_reserve_bytes) +
                 " leaves nothing of MemTotal " + format_bytes(node->total_bytes) +
                 "; lower system_reserve or give the budget as a size"};
  }
  config.auto_total_bytes = node->total_bytes;
  config.budget_bytes = node->total_bytes - config.system_reserve_bytes;
  return config;
}

}  // namespace ramguard
