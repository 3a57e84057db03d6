#include "procfs/cgroup_memory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "procfs/parse.hpp"
#include "procfs/proc_fs.hpp"

namespace ramguard {
namespace {

constexpr std::size_t kMaxCgroupStatBytes = 64 * 1024;
constexpr std::size_t kCounterBufferBytes = 64;

bool path_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

bool is_memory_cgroup_dir(const std::filesystem::path& dir) {
  return path_exists(dir / "memory.usage_in_bytes") || path_exists(dir / "memory.current");
}

// One number (v2 writes "max" only for limits, never for these counters).
int read_counter(int fd, std::uint64_t& out, std::string& problem) {
  char buf[kCounterBufferBytes];
  ssize_t n;
  do {
    n = ::pread(fd, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno;
  std::string_view text(buf, static_cast<std::size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  auto value = parse_decimal_u64(text, "counter");
  if (!value) {
    problem = value.error().message;
    return -1;
  }
  out = *value;
  return 0;
}

UniqueFd open_file(const std::filesystem::path& p, int flags = O_RDONLY) {
  return UniqueFd(::open(p.c_str(), flags | O_CLOEXEC));
}

}  // namespace

Result<CgroupMemoryStat> parse_cgroup_memory_stat(std::string_view text, bool v2) {
  CgroupMemoryStat s;
  std::uint64_t cache = 0;
  bool have_anon = false;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, space);
    std::uint64_t* target = nullptr;
    if (v2) {
      if (key == "anon") target = &s.anon_bytes, have_anon = true;
      if (key == "file") target = &cache;
      if (key == "shmem") target = &s.shmem_bytes;
    } else {
      // total_* count the whole hierarchy below the cgroup, which is what its usage counts.
      if (key == "total_rss") target = &s.anon_bytes, have_anon = true;
      if (key == "total_cache") target = &cache;
      if (key == "total_shmem") target = &s.shmem_bytes;
      if (key == "total_swap") target = &s.swap_bytes;
    }
    if (target == nullptr) continue;
    auto value = parse_decimal_u64(line.substr(space + 1), key);
    if (!value) return value.error();
    *target = *value;
  }
  if (!have_anon) {
    return Error{std::string("memory.stat has no ") + (v2 ? "anon" : "total_rss") + " line"};
  }
  // Both versions count shmem inside the page cache; file_bytes is the rest.
  s.file_bytes = cache >= s.shmem_bytes ? cache - s.shmem_bytes : 0;
  return s;
}

Result<std::filesystem::path> find_memory_cgroup_dir(const std::filesystem::path& cgroup_root,
                                                     const std::string& given) {
  if (given.empty()) return Error{"no cgroup path given"};
  if (given.find("/..") != std::string::npos || given.rfind("..", 0) == 0) {
    return Error{"cgroup path '" + given + "' must not contain '..'"};
  }
  const std::filesystem::path as_given(given);
  if (as_given.is_absolute() && is_memory_cgroup_dir(as_given)) return as_given;
  const std::string rel = given.front() == '/' ? given.substr(1) : given;
  for (const auto& dir :
       {cgroup_root / "memory" / rel, cgroup_root / rel, cgroup_root / "unified" / rel}) {
    if (is_memory_cgroup_dir(dir)) return dir;
  }
  if (path_exists(as_given) || path_exists(cgroup_root / "memory" / rel) ||
      path_exists(cgroup_root / rel)) {
    return Error{"cgroup '" + given +
                 "' is not a memory cgroup (no memory.usage_in_bytes or memory.current)"};
  }
  return Error{"cgroup '" + given + "' does not exist (looked for it as a directory and under " +
               cgroup_root.string() + ")"};
}

Result<std::filesystem::path> process_memory_cgroup_dir(const std::filesystem::path& proc_root,
                                                        pid_t pid,
                                                        const std::filesystem::path& cgroup_root) {
  auto text = read_small_file(proc_root / std::to_string(pid) / "cgroup", kMaxCgroupStatBytes);
  if (!text) return text.error();
  auto cg = parse_memory_cgroup(*text);
  if (!cg) return Error{"process " + std::to_string(pid) + ": " + cg.error().message};
  auto dir = find_memory_cgroup_dir(cgroup_root, cg->path);
  if (!dir) return Error{"process " + std::to_string(pid) + ": " + dir.error().message};
  return dir;
}

Result<CgroupMemory> open_memory_cgroup(const std::filesystem::path& proc_root,
                                        const std::filesystem::path& cgroup_root, pid_t pid,
                                        const std::string& given) {
  auto dir = given.empty() ? process_memory_cgroup_dir(proc_root, pid, cgroup_root)
                           : find_memory_cgroup_dir(cgroup_root, given);
  if (!dir) return dir.error();
  return CgroupMemory::open(*dir);
}

Result<CgroupMemory> CgroupMemory::open(const std::filesystem::path& dir) {
  CgroupMemory c;
  c.dir_ = dir;
  c.v2_ = !path_exists(dir / "memory.usage_in_bytes");
  const auto usage = dir / (c.v2_ ? "memory.current" : "memory.usage_in_bytes");
  c.usage_fd_ = open_file(usage);
  if (!c.usage_fd_.valid()) {
    const int err = errno;
    if (err == ENOENT) {
      return Error{dir.string() +
                   " is not a memory cgroup (no memory.usage_in_bytes or "
                   "memory.current)"};
    }
    return Error{"cannot open " + usage.string() + ": " + errno_text(err)};
  }
  c.stat_fd_ = open_file(dir / "memory.stat");
  if (!c.stat_fd_.valid()) {
    return Error{"cannot open " + (dir / "memory.stat").string() + ": " + errno_text(errno)};
  }
  // Read-write so the peak can be reset through the same file; read-only where not allowed.
  const auto peak = dir / (c.v2_ ? "memory.peak" : "memory.max_usage_in_bytes");
  c.peak_fd_ = open_file(peak, O_RDWR);
  if (!c.peak_fd_.valid()) c.peak_fd_ = open_file(peak);
  if (c.v2_) c.swap_fd_ = open_file(dir / "memory.swap.current");
  if (auto first = c.read_periodic(Instant{}); !first) return first.error();
  return c;
}

Error CgroupMemory::read_error(const char* file, int err) const {
  if (err == ENOENT || err == ENODEV) {
    return Error{"cgroup " + dir_.string() + " has been removed", ErrorKind::kNotFound};
  }
  return Error{"cannot read " + (dir_ / file).string() + ": " + errno_text(err)};
}

Result<MemoryReading> CgroupMemory::read_periodic(const Instant& at) {
  MemoryReading r;
  r.at = at;
  r.source = ReadingSource::kPeriodic;
  std::string problem;
  if (const int err = read_counter(usage_fd_.get(), r.rss_bytes, problem); err != 0) {
    if (err < 0) return Error{dir_.string() + ": usage: " + problem};
    return read_error(v2_ ? "memory.current" : "memory.usage_in_bytes", err);
  }
  std::size_t len = 0;
  if (const int err = pread_whole(stat_fd_.get(), stat_buf_, kMaxCgroupStatBytes, len); err != 0) {
    return read_error("memory.stat", err);
  }
  auto stat = parse_cgroup_memory_stat(std::string_view(stat_buf_.data(), len), v2_);
  if (!stat) return Error{dir_.string() + ": " + stat.error().message};
  r.anon_bytes = stat->anon_bytes;
  r.file_bytes = stat->file_bytes;
  r.shmem_bytes = stat->shmem_bytes;
  r.swap_bytes = stat->swap_bytes;
  // v2 keeps swap out of memory.stat: read at every reading so periodic and mark readings
  // count the same memory.
  if (swap_fd_.valid() && read_counter(swap_fd_.get(), r.swap_bytes, problem) != 0) {
    r.swap_bytes = 0;
  }
  // The usage (never swap) less its stat split: the cgroup's kernel memory.
  const std::uint64_t split = r.anon_bytes + r.file_bytes + r.shmem_bytes;
  r.kernel_bytes = r.rss_bytes > split ? r.rss_bytes - split : 0;
  return r;
}

Result<MemoryReading> CgroupMemory::read_complete(const Instant& at) {
  auto r = read_periodic(at);
  if (!r) return r;
  r->source = ReadingSource::kMark;
  std::string problem;
  if (peak_fd_.valid()) {
    if (const int err = read_counter(peak_fd_.get(), r->hwm_bytes, problem); err != 0) {
      if (err < 0) return Error{dir_.string() + ": peak: " + problem};
      return read_error(v2_ ? "memory.peak" : "memory.max_usage_in_bytes", err);
    }
  }
  // Usage read a moment after the peak may be higher: the peak is never below a reading.
  if (r->hwm_bytes < r->rss_bytes) r->hwm_bytes = r->rss_bytes;
  return r;
}

Status CgroupMemory::reset_peak() {
  if (!peak_fd_.valid()) {
    return Error{dir_.string() + " has no " +
                 (v2_ ? "memory.peak (Linux 5.19+)" : "memory.max_usage_in_bytes") +
                 ": peaks are sampled"};
  }
  const char* value = v2_ ? "reset\n" : "0\n";
  const std::size_t size = v2_ ? 6 : 2;
  ssize_t n;
  do {
    n = ::pwrite(peak_fd_.get(), value, size, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return Error{"cannot reset the peak of " + dir_.string() + ": " + errno_text(errno) +
                 (v2_ ? " (a per-file reset of memory.peak needs Linux 6.12+)" : "")};
  }
  return ok_status();
}

Result<std::uint64_t> CgroupMemory::peak_usage_bytes() {
  const char* file = v2_ ? "memory.peak" : "memory.max_usage_in_bytes";
  if (!peak_fd_.valid()) return Error{dir_.string() + " has no " + file};
  std::uint64_t peak = 0;
  std::string problem;
  if (const int err = read_counter(peak_fd_.get(), peak, problem); err != 0) {
    if (err < 0) return Error{dir_.string() + ": peak: " + problem};
    return read_error(file, err);
  }
  return peak;
}

namespace {

// One counter file of DIR by path; "max" (v2's no limit) reads as 0.
Result<std::uint64_t> read_counter_file(const std::filesystem::path& dir, const char* file) {
  auto text = read_small_file(dir / file, kCounterBufferBytes);
  if (!text) return text.error();
  std::string_view value(*text);
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
  if (value == "max") return std::uint64_t{0};
  auto n = parse_decimal_u64(value, file);
  if (!n) return Error{dir.string() + ": " + n.error().message};
  return n;
}

Result<std::uint64_t> read_own_limit(const std::filesystem::path& dir, bool v2) {
  auto limit = read_counter_file(dir, v2 ? "memory.max" : "memory.limit_in_bytes");
  if (!limit) return limit;
  // v1 writes "no limit" as LONG_MAX rounded down to a page: anything past 2^62 is none.
  constexpr std::uint64_t kNoLimitAbove = std::uint64_t{1} << 62;
  return *limit >= kNoLimitAbove ? std::uint64_t{0} : *limit;
}

}  // namespace

Result<std::uint64_t> CgroupMemory::own_limit_bytes() const {
  return read_own_limit(dir_, v2_);
}

Result<CgroupPeak> read_cgroup_peak(const std::filesystem::path& dir) {
  const bool v2 = !path_exists(dir / "memory.usage_in_bytes");
  auto peak = read_counter_file(dir, v2 ? "memory.peak" : "memory.max_usage_in_bytes");
  if (!peak) return peak.error();
  auto limit = read_own_limit(dir, v2);
  return CgroupPeak{*peak, limit ? *limit : 0};
}

Result<std::uint64_t> CgroupMemory::oom_kills() {
  const char* file = v2_ ? "memory.events" : "memory.oom_control";
  if (!oom_fd_.valid()) {
    oom_fd_ = open_file(dir_ / file);
    if (!oom_fd_.valid()) return read_error(file, errno);
  }
  std::size_t len = 0;
  if (const int err = pread_whole(oom_fd_.get(), oom_buf_, kMaxCgroupStatBytes, len); err != 0) {
    return read_error(file, err);
  }
  auto count = parse_oom_kill_count(std::string_view(oom_buf_.data(), len));
  if (!count) return Error{(dir_ / file).string() + ": " + count.error().message};
  return count;
}

}  // namespace ramguard
