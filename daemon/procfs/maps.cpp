#include "procfs/maps.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include "procfs/unique_fd.hpp"

namespace ramguard {

const char* mapping_kind_name(MappingKind kind) {
  switch (kind) {
    case MappingKind::kAnon:
      return "anon";
    case MappingKind::kFile:
      return "file";
    case MappingKind::kShmem:
      return "shmem";
    case MappingKind::kDevice:
      return "device";
  }
  return "anon";
}

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string_view next_field(std::string_view& line) {
  const auto begin = line.find_first_not_of(' ');
  if (begin == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(begin);
  const auto end = line.find(' ');
  const std::string_view field = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  return field;
}

bool parse_hex(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool parse_dec(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 10);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Result<Mapping> parse_line(std::string_view line) {
  const std::string quoted = "'" + std::string(line.substr(0, 120)) + "'";
  Mapping m;
  const std::string_view range = next_field(line);
  const auto dash = range.find('-');
  if (dash == std::string_view::npos || !parse_hex(range.substr(0, dash), m.start) ||
      !parse_hex(range.substr(dash + 1), m.end) || m.end < m.start) {
    return Error{"maps line " + quoted + ": expected START-END in hex"};
  }
  const std::string_view perms = next_field(line);
  if (perms.size() != 4) return Error{"maps line " + quoted + ": expected 4 permission letters"};
  m.shared = perms[3] == 's';
  std::uint64_t offset = 0;
  if (!parse_hex(next_field(line), offset)) {
    return Error{"maps line " + quoted + ": expected an offset in hex"};
  }
  const std::string_view dev = next_field(line);
  if (dev.find(':') == std::string_view::npos) {
    return Error{"maps line " + quoted + ": expected a device MAJOR:MINOR"};
  }
  if (!parse_dec(next_field(line), m.inode)) {
    return Error{"maps line " + quoted + ": expected an inode number"};
  }
  const auto path_begin = line.find_first_not_of(' ');
  if (path_begin != std::string_view::npos) m.path = std::string(line.substr(path_begin));
  m.kind = classify_mapping(m.shared, m.path);
  return m;
}

}  // namespace

MappingKind classify_mapping(bool shared, std::string_view path) {
  if (path.empty() || path.front() == '[') return MappingKind::kAnon;
  if (starts_with(path, "/dev/shm/") || starts_with(path, "/memfd:") ||
      starts_with(path, "/SYSV")) {
    return MappingKind::kShmem;
  }
  // A shared anonymous mapping (MAP_SHARED|MAP_ANONYMOUS) is shmem backed by /dev/zero.
  if (starts_with(path, "/dev/zero")) return shared ? MappingKind::kShmem : MappingKind::kAnon;
  if (starts_with(path, "/dev/")) return MappingKind::kDevice;
  return MappingKind::kFile;
}

Result<std::vector<Mapping>> parse_maps(std::string_view text) {
  if (text.size() > kMaxMapsBytes) {
    return Error{"maps text of " + std::to_string(text.size()) + " bytes is larger than " +
                 std::to_string(kMaxMapsBytes)};
  }
  std::vector<Mapping> out;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty()) continue;
    auto m = parse_line(line);
    if (!m) return m.error();
    out.push_back(std::move(*m));
  }
  return out;
}

CensusPlacement place_ranges(std::span<const Mapping> maps, std::span<const CensusRange> ranges) {
  CensusPlacement out;
  std::map<std::string, std::uint64_t> file_bytes;
  for (const CensusRange& r : ranges) {
    std::uint64_t at = r.address;
    const std::uint64_t end = r.address + r.nbytes < r.address ? UINT64_MAX : r.address + r.nbytes;
    // The first mapping that ends after `at` (maps are sorted by start).
    auto it = std::upper_bound(maps.begin(), maps.end(), at,
                               [](std::uint64_t a, const Mapping& m) { return a < m.end; });
    while (at < end) {
      if (it == maps.end() || it->start >= end) {
        out.unmapped_bytes += end - at;
        break;
      }
      if (it->start > at) {
        out.unmapped_bytes += it->start - at;
        at = it->start;
      }
      const std::uint64_t piece = std::min(end, it->end) - at;
      switch (it->kind) {
        case MappingKind::kAnon:
          out.anon_bytes += piece;
          break;
        case MappingKind::kFile:
          out.file_bytes += piece;
          file_bytes[it->path] += piece;
          break;
        case MappingKind::kShmem:
          out.shmem_bytes += piece;
          break;
        case MappingKind::kDevice:
          out.device_bytes += piece;
          break;
      }
      at += piece;
      ++it;
    }
  }
  std::vector<std::pair<std::string, std::uint64_t>> files(file_bytes.begin(), file_bytes.end());
  std::stable_sort(files.begin(), files.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (std::size_t i = 0; i < files.size() && i < 8; ++i) out.files.push_back(files[i].first);
  return out;
}

namespace {

Result<std::string> read_text(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error{"cannot open " + path.string() + ": " + std::strerror(errno)};
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{"cannot read " + path.string() + ": " + std::strerror(errno)};
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxMapsBytes) return Error{path.string() + " is too large"};
  }
  return text;
}

// The parts of the ranges that lie in a mapping.
std::vector<CensusRange> mapped_parts(std::span<const Mapping> maps,
                                      std::span<const CensusRange> ranges) {
  std::vector<CensusRange> out;
  for (const CensusRange& r : ranges) {
    const std::uint64_t end = r.address + r.nbytes < r.address ? UINT64_MAX : r.address + r.nbytes;
    auto it = std::upper_bound(maps.begin(), maps.end(), r.address,
                               [](std::uint64_t a, const Mapping& m) { return a < m.end; });
    for (; it != maps.end() && it->start < end; ++it) {
      const std::uint64_t lo = std::max(r.address, it->start);
      const std::uint64_t hi = std::min(end, it->end);
      if (hi > lo) out.push_back({lo, hi - lo});
    }
  }
  return out;
}

// Resident pages of the ranges (pagemap bit 63), in bytes; an Error when pagemap is unreadable.
Result<std::uint64_t> resident_bytes(const std::filesystem::path& pagemap_path,
                                     std::span<const CensusRange> ranges,
                                     std::uint64_t page_size_bytes) {
  UniqueFd fd(::open(pagemap_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid())
    return Error{"cannot open " + pagemap_path.string() + ": " + std::strerror(errno)};
  std::uint64_t resident = 0;
  std::vector<std::uint64_t> entries(4096);
  for (const CensusRange& r : ranges) {
    if (r.nbytes == 0) continue;
    const std::uint64_t first = r.address / page_size_bytes;
    const std::uint64_t last = (r.address + r.nbytes - 1) / page_size_bytes;
    for (std::uint64_t page = first; page <= last;) {
      const std::uint64_t count = std::min<std::uint64_t>(entries.size(), last - page + 1);
      const ssize_t n = ::pread(fd.get(), entries.data(), count * sizeof(std::uint64_t),
                                static_cast<off_t>(page * sizeof(std::uint64_t)));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Error{"cannot read " + pagemap_path.string() + ": " + std::strerror(errno)};
      }
      const auto got = static_cast<std::uint64_t>(n) / sizeof(std::uint64_t);
      if (got == 0) break;  // past the end of the address space
      for (std::uint64_t i = 0; i < got; ++i) {
        if ((entries[i] >> 63) == 0) continue;
        // The page's bytes that belong to the range (its first and last page are partial).
        const std::uint64_t lo = std::max(r.address, (page + i) * page_size_bytes);
        const std::uint64_t hi = std::min(r.address + r.nbytes, (page + i + 1) * page_size_bytes);
        resident += hi - lo;
      }
      page += got;
    }
  }
  return resident;
}

}  // namespace

CensusPlacement place_census(const std::filesystem::path& proc_root, pid_t pid,
                             std::span<const CensusRange> ranges, std::uint64_t page_size_bytes) {
  const std::filesystem::path dir = proc_root / std::to_string(pid);
  auto text = read_text(dir / "maps");
  if (!text) {
    CensusPlacement out;
    out.error = text.error().message;
    return out;
  }
  auto maps = parse_maps(*text);
  if (!maps) {
    CensusPlacement out;
    out.error = maps.error().message;
    return out;
  }
  CensusPlacement out = place_ranges(*maps, ranges);
  if (page_size_bytes > 0) {
    // Only the mapped parts: nothing there is resident, and a client's range over a hole of
    // the address space (up to 1 PB) would otherwise cost a pagemap read of terabytes.
    const std::vector<CensusRange> mapped = mapped_parts(*maps, ranges);
    if (auto resident = resident_bytes(dir / "pagemap", mapped, page_size_bytes)) {
      out.resident_bytes = *resident;
      out.resident_known = true;
    }
  }
  return out;
}

}  // namespace ramguard
