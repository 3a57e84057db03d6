#include "procfs/cgroup.hpp"

#include "procfs/parse.hpp"
#include "procfs/proc_fs.hpp"

namespace ramguard {
namespace {

constexpr std::size_t kMaxCgroupFileBytes = 64 * 1024;

bool lists_memory(std::string_view controllers) {
  while (!controllers.empty()) {
    const std::size_t comma = controllers.find(',');
    if (controllers.substr(0, comma) == "memory") return true;
    if (comma == std::string_view::npos) break;
    controllers.remove_prefix(comma + 1);
  }
  return false;
}

bool safe_cgroup_path(std::string_view p) {
  return p.starts_with('/') && p.find("/..") == std::string_view::npos;
}

}  // namespace

Result<MemoryCgroup> parse_memory_cgroup(std::string_view text) {
  if (text.size() > kMaxCgroupFileBytes) return Error{"cgroup file is too large"};
  MemoryCgroup unified;
  bool have_unified = false;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    // hierarchy-ID:controller-list:cgroup-path; the path itself may contain ':'.
    const std::size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    const std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string_view path = line.substr(c2 + 1);
    if (!safe_cgroup_path(path)) continue;
    if (lists_memory(controllers)) return MemoryCgroup{std::string(path), false};
    if (line.substr(0, c1) == "0" && controllers.empty()) {
      unified = MemoryCgroup{std::string(path), true};
      have_unified = true;
    }
  }
  if (have_unified) return unified;
  return Error{"no memory cgroup listed"};
}

Result<std::uint64_t> parse_oom_kill_count(std::string_view text) {
  if (text.size() > kMaxCgroupFileBytes) return Error{"OOM counter file is too large"};
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.starts_with("oom_kill ")) return parse_decimal_u64(line.substr(9), "oom_kill");
  }
  return Error{"no oom_kill line"};
}

Result<std::filesystem::path> find_oom_counter(const std::filesystem::path& proc_root, pid_t pid,
                                               const std::filesystem::path& cgroup_root) {
  auto text = read_small_file(proc_root / std::to_string(pid) / "cgroup", kMaxCgroupFileBytes);
  if (!text) return text.error();
  auto cg = parse_memory_cgroup(*text);
  if (!cg) return Error{"process " + std::to_string(pid) + ": " + cg.error().message};
  const std::string rel = cg->path.substr(1);
  std::filesystem::path file;
  if (!cg->v2) {
    file = cgroup_root / "memory" / rel / "memory.oom_control";
  } else {
    file = cgroup_root / rel / "memory.events";
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) file = cgroup_root / "unified" / rel / "memory.events";
  }
  // Prove it is readable now: after the exit it is too late to find out.
  if (auto n = read_oom_kill_count(file); !n) return n.error();
  return file;
}

Result<std::uint64_t> read_oom_kill_count(const std::filesystem::path& counter_file) {
  auto text = read_small_file(counter_file, kMaxCgroupFileBytes);
  if (!text) return text.error();
  auto n = parse_oom_kill_count(*text);
  if (!n) return Error{counter_file.string() + ": " + n.error().message};
  return n;
}

}  // namespace ramguard
