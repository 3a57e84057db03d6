#include "procfs/proc_fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>

#include "procfs/maps.hpp"

namespace ramguard {
namespace {

constexpr std::size_t kStatusInitialBytes = 4096;
constexpr std::size_t kStatmBufferBytes = 512;

bool is_gone(int err) {
  return err == ESRCH || err == ENOENT;
}

}  // namespace

int pread_whole(int fd, std::vector<char>& buf, std::size_t max_bytes, std::size_t& len) {
  if (buf.empty()) buf.resize(kStatusInitialBytes);
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    len = static_cast<std::size_t>(n);
    if (len < buf.size() || buf.size() > max_bytes) return 0;  // parser rejects the oversize
    buf.resize(buf.size() * 2);
  }
}

namespace {

// One buffer for every handle's status reads (readings happen on the daemon's one thread): a
// thousand watched processes do not each keep 4 KB.
std::vector<char>& status_buffer() {
  thread_local std::vector<char> buffer;
  return buffer;
}

int read_path(const std::filesystem::path& path, std::size_t max_bytes, std::string& out) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  std::vector<char> buf(1024);
  std::size_t len = 0;
  if (const int err = pread_whole(fd.get(), buf, max_bytes, len); err != 0) return err;
  out.assign(buf.data(), len);
  return 0;
}

Result<std::uint64_t> pages_to_bytes(std::uint64_t pages, std::uint64_t page_size) {
  if (page_size != 0 && pages > std::numeric_limits<std::uint64_t>::max() / page_size) {
    return Error{"statm page count " + std::to_string(pages) + " overflows 64-bit bytes"};
  }
  return pages * page_size;
}

}  // namespace

Result<std::string> read_small_file(const std::filesystem::path& path, std::size_t max_bytes) {
  std::string out;
  if (const int err = read_path(path, max_bytes, out); err != 0) {
    return Error{"cannot read " + path.string() + ": " + errno_text(err)};
  }
  return out;
}

Error ProcessHandle::read_error(const char* file, int err) const {
  if (is_gone(err))
    return Error{"process " + std::to_string(id_.pid) + " has exited", ErrorKind::kNotFound};
  return Error{"cannot read " + in_dir(file) + ": " + errno_text(err)};
}

Result<MemoryReading> ProcessHandle::read_periodic(const Instant& at) {
  // status, not statm: statm's "shared" is file and shmem together, so a periodic reading from
  // it would count /dev/shm and memfd pages zero times where a mark counts them once.
  auto r = read_complete(at);
  if (!r) return r;
  r->source = ReadingSource::kPeriodic;
  r->hwm_bytes = 0;  // the high-water mark is folded at marks and refreshes only
  return r;
}

Result<MemoryReading> ProcessHandle::read_statm(const Instant& at) {
  char buf[kStatmBufferBytes];
  ssize_t n;
  do {
    n = ::pread(statm_fd_.get(), buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return read_error("statm", errno);
  if (static_cast<std::size_t>(n) == sizeof buf) {
    return Error{"statm of process " + std::to_string(id_.pid) + " is larger than expected"};
  }
  auto pages = parse_statm(std::string_view(buf, static_cast<std::size_t>(n)));
  if (!pages) return Error{"process " + std::to_string(id_.pid) + ": " + pages.error().message};
  // A zombie keeps its /proc entry but has no address space: statm is all zeros.
  if (pages->size == 0)
    return Error{"process " + std::to_string(id_.pid) + " has exited", ErrorKind::kNotFound};
  auto rss = pages_to_bytes(pages->resident, page_size_bytes_);
  if (!rss) return rss.error();
  MemoryReading r;
  r.at = at;
  r.source = ReadingSource::kPeriodic;
  r.rss_bytes = *rss;
  r.file_bytes = pages->shared * page_size_bytes_;  // shared <= resident: cannot overflow
  r.anon_bytes = r.rss_bytes - r.file_bytes;
  return r;
}

Result<MemoryReading> ProcessHandle::read_complete(const Instant& at) {
  std::size_t len = 0;
  if (const int err = pread_whole(status_fd_.get(), status_buffer(), kMaxStatusBytes, len);
      err != 0) {
    return read_error("status", err);
  }
  const std::string_view text(status_buffer().data(), len);
  auto fields = parse_status(text);
  if (!fields) {
    if (fields.error().kind == ErrorKind::kNotFound)
      return Error{"process " + std::to_string(id_.pid) + " has exited", ErrorKind::kNotFound};
    return Error{"process " + std::to_string(id_.pid) + ": " + fields.error().message};
  }
  MemoryReading r;
  r.at = at;
  r.source = ReadingSource::kMark;
  r.rss_bytes = fields->vm_rss_bytes;
  r.anon_bytes = fields->rss_anon_bytes;
  r.file_bytes = fields->rss_file_bytes;
  r.shmem_bytes = fields->rss_shmem_bytes;
  r.swap_bytes = fields->vm_swap_bytes;
  r.hwm_bytes = fields->vm_hwm_bytes;
  last_hwm_bytes_ = fields->vm_hwm_bytes;
  return r;
}

std::string ProcessHandle::read_comm() const {
  UniqueFd fd(::openat(dir_fd_.get(), "comm", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "?";
  char buf[64];
  const ssize_t n = ::pread(fd.get(), buf, sizeof buf, 0);
  if (n <= 0) return "?";
  std::string comm(buf, static_cast<std::size_t>(n));
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm.empty() ? "?" : comm;
}

Result<std::vector<SharedSegment>> ProcessHandle::read_shared_segments() const {
  // maps is a seq_file: read it sequentially to its end (a pread may stop at a record).
  UniqueFd fd(::openat(dir_fd_.get(), "maps", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return read_error("maps", errno);
  std::string text;
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return read_error("maps", errno);
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > kMaxMapsBytes) {
      return Error{"maps of process " + std::to_string(id_.pid) + " is larger than " +
                   std::to_string(kMaxMapsBytes) + " bytes"};
    }
  }
  auto mappings = parse_maps(text);
  if (!mappings)
    return Error{"process " + std::to_string(id_.pid) + ": " + mappings.error().message};
  std::vector<SharedSegment> out;
  std::vector<std::uint64_t> seen_inodes;
  for (const Mapping& m : *mappings) {
    if (!m.shared || m.kind != MappingKind::kShmem) continue;
    if (std::find(seen_inodes.begin(), seen_inodes.end(), m.inode) != seen_inodes.end()) continue;
    seen_inodes.push_back(m.inode);
    char name[64];
    std::snprintf(name, sizeof name, "map_files/%llx-%llx",
                  static_cast<unsigned long long>(m.start), static_cast<unsigned long long>(m.end));
    struct stat st {};
    if (::fstatat(dir_fd_.get(), name, &st, 0) != 0) continue;  // not permitted, or unmapped
    SharedSegment seg{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                      static_cast<std::uint64_t>(st.st_blocks) * 512};
    if (std::find_if(out.begin(), out.end(), [&](const SharedSegment& o) {
          return o.dev == seg.dev && o.ino == seg.ino;
        }) == out.end()) {
      out.push_back(seg);
    }
  }
  return out;
}

Result<std::uint64_t> ProcessHandle::read_pss() const {
  UniqueFd fd(::openat(dir_fd_.get(), "smaps_rollup", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return read_error("smaps_rollup", errno);
  std::vector<char> buf(1024);
  std::size_t len = 0;
  if (const int err = pread_whole(fd.get(), buf, kMaxStatusBytes, len); err != 0) {
    return read_error("smaps_rollup", err);
  }
  auto pss = parse_smaps_rollup_pss(std::string_view(buf.data(), len));
  if (!pss) return Error{"process " + std::to_string(id_.pid) + ": " + pss.error().message};
  return pss;
}

Status ProcessHandle::reset_hwm() {
  const std::string prefix = "cannot reset high-water mark of PID " + std::to_string(id_.pid);
  if (!clear_refs_fd_.valid()) {
    clear_refs_fd_.reset(::openat(dir_fd_.get(), "clear_refs", O_WRONLY | O_CLOEXEC));
    if (!clear_refs_fd_.valid()) {
      const int err = errno;
      return Error{prefix + ": open " + in_dir("clear_refs") + ": " + errno_text(err)};
    }
  }
  ssize_t n;
  do {
    n = ::pwrite(clear_refs_fd_.get(), "5", 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n != 1) {
    const int err = n < 0 ? errno : EIO;
    clear_refs_fd_.reset();  // reopen next time: the cause may be transient
    if (is_gone(err)) return Error{prefix + ": process has exited", ErrorKind::kNotFound};
    return Error{prefix + ": write " + in_dir("clear_refs") + ": " + errno_text(err)};
  }
  last_hwm_bytes_ = 0;  // the mark before the reset is not this phase's
  return ok_status();
}

Result<bool> ProcessHandle::is_same_process() const {
  std::string text;
  if (const int err = read_path(in_dir("stat"), kMaxStatBytes, text); err != 0) {
    if (is_gone(err)) return false;
    return Error{"cannot read " + in_dir("stat") + ": " + errno_text(err)};
  }
  auto stat = parse_stat(text);
  if (!stat) return Error{"process " + std::to_string(id_.pid) + ": " + stat.error().message};
  if (stat->state == 'Z' || stat->state == 'X') return false;
  return stat->start_time_ticks == id_.start_time_ticks;
}

ProcFs::ProcFs(std::filesystem::path root, long page_size_bytes)
    : root_(std::move(root)),
      page_size_bytes_(page_size_bytes > 0 ? static_cast<std::uint64_t>(page_size_bytes) : 4096) {}

Result<ProcFs::Snapshot> ProcFs::snapshot(pid_t pid) const {
  const std::string who = "cannot read PID " + std::to_string(pid);
  if (pid <= 0) return Error{who + ": not a valid process id"};
  const std::string path = (root_ / std::to_string(pid) / "status").string();
  // One read when the buffer holds it all: a second read of a /proc file renders it again.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::size_t len = 0;
  const int err =
      !fd.valid() ? errno : pread_whole(fd.get(), status_buffer(), kMaxStatusBytes, len);
  if (err != 0) {
    if (is_gone(err)) return Error{who + ": no such process", ErrorKind::kNotFound};
    return Error{who + ": cannot read " + path + ": " + errno_text(err)};
  }
  const std::string_view text(status_buffer().data(), len);
  auto status = parse_status(text);
  if (!status) {
    if (status.error().kind == ErrorKind::kNotFound)
      return Error{who + ": process has exited", ErrorKind::kNotFound};
    return Error{who + ": " + status.error().message};
  }
  return Snapshot{status->real_uid, status->vm_rss_bytes};
}

Result<ProcessHandle> ProcFs::open(pid_t pid) const {
  const std::string who = "cannot watch PID " + std::to_string(pid);
  if (pid <= 0) return Error{who + ": not a valid process id"};
  ProcessHandle h;
  h.dir_ = (root_ / std::to_string(pid)).string();
  h.page_size_bytes_ = page_size_bytes_;
  h.dir_fd_.reset(::open(h.dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!h.dir_fd_.valid()) {
    const int err = errno;
    if (is_gone(err)) return Error{who + ": no such process"};
    return Error{who + ": open " + h.dir_ + ": " + errno_text(err)};
  }
  auto open_in_dir = [&](const char* file, UniqueFd& fd) -> Status {
    fd.reset(::openat(h.dir_fd_.get(), file, O_RDONLY | O_CLOEXEC));
    if (fd.valid()) return ok_status();
    const int err = errno;
    return Error{who + ": open " + h.in_dir(file) + ": " + errno_text(err)};
  };

  UniqueFd stat_fd;
  if (auto s = open_in_dir("stat", stat_fd); !s) return s.error();
  std::vector<char> buf(1024);
  std::size_t len = 0;
  if (const int err = pread_whole(stat_fd.get(), buf, kMaxStatBytes, len); err != 0) {
    return Error{who + ": " + h.read_error("stat", err).message};
  }
  auto stat = parse_stat(std::string_view(buf.data(), len));
  if (!stat) return Error{who + ": " + stat.error().message};
  if (stat->pid != pid) {
    return Error{who + ": " + h.in_dir("stat") + " names PID " + std::to_string(stat->pid)};
  }
  if (stat->state == 'Z' || stat->state == 'X')
    return Error{who + ": process has exited", ErrorKind::kNotFound};
  h.id_ = TargetId{pid, stat->start_time_ticks};

  if (auto s = open_in_dir("statm", h.statm_fd_); !s) return s.error();
  if (auto s = open_in_dir("status", h.status_fd_); !s) return s.error();

  // Owner and name come from status; a process without memory lines cannot be guarded.
  if (const int err = pread_whole(h.status_fd_.get(), status_buffer(), kMaxStatusBytes, len);
      err != 0) {
    return Error{who + ": " + h.read_error("status", err).message};
  }
  auto status = parse_status(std::string_view(status_buffer().data(), len));
  if (!status) return Error{who + ": " + status.error().message};
  h.uid_ = status->real_uid;
  h.name_ = std::move(status->name);
  if (auto first = h.read_statm(Instant{}); !first)
    return Error{who + ": " + first.error().message};
  return h;
}

Result<TargetId> ProcFs::identify(pid_t pid) const {
  if (pid <= 0) return Error{"PID " + std::to_string(pid) + " is not a valid process id"};
  auto alive = identify_alive(pid);
  if (!alive) return alive.error();
  if (!*alive) return Error{"process " + std::to_string(pid) + " does not exist"};
  return **alive;
}

Result<std::optional<TargetId>> ProcFs::identify_alive(pid_t pid) const {
  const auto path = root_ / std::to_string(pid) / "stat";
  std::string text;
  if (const int err = read_path(path, kMaxStatBytes, text); err != 0) {
    if (is_gone(err)) return std::optional<TargetId>();
    return Error{"cannot read " + path.string() + ": " + errno_text(err)};
  }
  auto stat = parse_stat(text);
  if (!stat) return Error{"process " + std::to_string(pid) + ": " + stat.error().message};
  if (stat->state == 'Z' || stat->state == 'X') return std::optional<TargetId>();
  return std::optional<TargetId>(TargetId{pid, stat->start_time_ticks});
}

Result<bool> ProcFs::is_alive(const TargetId& id) const {
  if (id.pid <= 0) return false;
  auto now = identify_alive(id.pid);
  if (!now) return now.error();
  return now->has_value() && (*now)->start_time_ticks == id.start_time_ticks;
}

}  // namespace ramguard
