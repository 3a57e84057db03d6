#include "procfs/cgroup_limit.hpp"

#include "procfs/cgroup_memory.hpp"
#include "procfs/parse.hpp"
#include "procfs/proc_fs.hpp"

namespace ramguard {
namespace {

constexpr std::size_t kMaxLimitFileBytes = 64;
// v1 writes PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB pages) for "no limit";
// nothing real comes near 2^62 bytes.
constexpr std::uint64_t kUnlimitedFromBytes = 1ULL << 62;

bool path_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

}  // namespace

Result<std::optional<std::uint64_t>> parse_cgroup_limit(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text == "max") return std::optional<std::uint64_t>{};
  auto value = parse_decimal_u64(text, "memory limit");
  if (!value) return value.error();
  if (*value >= kUnlimitedFromBytes) return std::optional<std::uint64_t>{};
  return std::optional<std::uint64_t>{*value};
}

Result<CgroupLimit> read_cgroup_limit(const std::filesystem::path& cgroup_root,
                                      const std::filesystem::path& dir) {
  const bool v2 = !path_exists(dir / "memory.usage_in_bytes");
  const char* file = v2 ? "memory.max" : "memory.limit_in_bytes";
  const std::string root = cgroup_root.lexically_normal().string();
  CgroupLimit out;
  // The hierarchy's root has no v2 memory.max and an unlimited v1 limit; the walk stops there
  // or when it leaves cgroup_root (a directory given by absolute path elsewhere: it alone).
  for (std::filesystem::path d = dir.lexically_normal();; d = d.parent_path()) {
    if (path_exists(d / file)) {
      auto text = read_small_file(d / file, kMaxLimitFileBytes);
      if (!text) return text.error();
      auto limit = parse_cgroup_limit(*text);
      if (!limit) return Error{(d / file).string() + ": " + limit.error().message};
      if (*limit && (!out.bytes || **limit < *out.bytes)) {
        out.bytes = *limit;
        out.binding_dir = d;
      }
    }
    const std::string here = d.string();
    if (here.size() <= root.size() || here.compare(0, root.size(), root) != 0 ||
        d == d.parent_path()) {
      break;
    }
  }
  return out;
}

Result<CgroupLimit> process_cgroup_limit(const std::filesystem::path& proc_root, pid_t pid,
                                         const std::filesystem::path& cgroup_root) {
  auto dir = process_memory_cgroup_dir(proc_root, pid, cgroup_root);
  if (!dir) return dir.error();
  return read_cgroup_limit(cgroup_root, *dir);
}

}  // namespace ramguard
