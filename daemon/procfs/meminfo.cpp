#include "procfs/meminfo.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "procfs/parse.hpp"

namespace ramguard {
namespace {

// Real meminfo is about 1.5 KB; a fixed buffer keeps a decision free of allocation.
constexpr std::size_t kMeminfoBufferBytes = 8192;

// "Name:   12345 kB" -> bytes; nullopt when the line is not `name`.
Result<std::optional<std::uint64_t>> kb_line(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line.substr(0, name.size()) != name ||
      line[name.size()] != ':') {
    return std::optional<std::uint64_t>{};
  }
  std::string_view rest = line.substr(name.size() + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const bool kb = rest.size() > 3 && rest.substr(rest.size() - 3) == " kB";
  if (kb) rest.remove_suffix(3);
  auto value = parse_decimal_u64(rest, name);
  if (!value) return value.error();
  if (*value > (UINT64_MAX >> 10)) return Error{"meminfo: " + std::string(name) + " is too large"};
  return std::optional<std::uint64_t>{kb ? *value * 1024 : *value};
}

}  // namespace

Result<NodeMemory> parse_meminfo(std::string_view text) {
  std::optional<std::uint64_t> total, available;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    for (auto [name, slot] : {std::pair{std::string_view("MemTotal"), &total},
                              std::pair{std::string_view("MemAvailable"), &available}}) {
      auto value = kb_line(line, name);
      if (!value) return value.error();
      if (*value) *slot = **value;
    }
    if (total && available) break;
  }
  if (!total) return Error{"meminfo has no MemTotal line"};
  if (!available) return Error{"meminfo has no MemAvailable line (Linux 3.14 or later needed)"};
  return NodeMemory{*total, *available};
}

Result<MeminfoReader> MeminfoReader::open(const std::filesystem::path& proc_root) {
  MeminfoReader r;
  r.path_ = proc_root / "meminfo";
  r.fd_ = UniqueFd(::open(r.path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!r.fd_.valid()) return Error{"cannot open " + r.path_.string() + ": " + errno_text(errno)};
  if (auto first = r.read(); !first) return first.error();
  return r;
}

Result<NodeMemory> MeminfoReader::read() const {
  char buf[kMeminfoBufferBytes];
  ssize_t n;
  do {
    n = ::pread(fd_.get(), buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Error{"cannot read " + path_.string() + ": " + errno_text(errno)};
  auto parsed = parse_meminfo(std::string_view(buf, static_cast<std::size_t>(n)));
  if (!parsed) return Error{path_.string() + ": " + parsed.error().message};
  return parsed;
}

}  // namespace ramguard
