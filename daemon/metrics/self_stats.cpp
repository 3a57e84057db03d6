#include "metrics/self_stats.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <string>

// Weak: resolves to jemalloc's mallctl when jemalloc is linked, to nullptr otherwise (the
// ASan+UBSan build), so one binary-independent module serves both.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp,
                       std::size_t newlen) __attribute__((weak));

namespace ramguard {

Result<std::uint64_t> parse_statm_resident_pages(std::string_view text) {
  // Skip field 1 (size), then parse field 2 (resident).
  std::size_t pos = text.find_first_not_of(' ');
  if (pos == std::string_view::npos) return Error{"statm is empty"};
  pos = text.find(' ', pos);
  if (pos == std::string_view::npos) return Error{"statm has only one field, need resident"};
  pos = text.find_first_not_of(' ', pos);
  if (pos == std::string_view::npos) return Error{"statm has no resident field"};
  std::uint64_t pages = 0;
  const char* begin = text.data() + pos;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, pages);
  if (ec != std::errc{} || (ptr != end && *ptr != ' ' && *ptr != '\n')) {
    return Error{"statm resident field is not a page count: '" + std::string(text.substr(pos, 32)) +
                 "'"};
  }
  return pages;
}

Result<std::uint64_t> read_statm_rss_bytes(const std::filesystem::path& statm) {
  std::ifstream in(statm);
  if (!in) return Error{"cannot open " + statm.string() + ": " + std::strerror(errno)};
  std::string line;
  std::getline(in, line, '\0');
  if (line.size() > 4096) line.resize(4096);  // statm is one short line; never trust more
  auto pages = parse_statm_resident_pages(line);
  if (!pages) return Error{statm.string() + ": " + pages.error().message};
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return *pages * static_cast<std::uint64_t>(page_size > 0 ? page_size : 4096);
}

bool jemalloc_linked() {
  return mallctl != nullptr;
}

namespace {

bool read_size_stat(const char* name, std::uint64_t& out) {
  std::size_t value = 0;
  std::size_t len = sizeof(value);
  if (mallctl(name, &value, &len, nullptr, 0) != 0) return false;
  out = value;
  return true;
}

}  // namespace

std::optional<JemallocStats> read_jemalloc_stats() {
  if (!jemalloc_linked()) return std::nullopt;
  // jemalloc caches its statistics; writing the epoch refreshes them.
  std::uint64_t epoch = 1;
  std::size_t epoch_len = sizeof(epoch);
  if (mallctl("epoch", &epoch, &epoch_len, &epoch, epoch_len) != 0) return std::nullopt;
  JemallocStats stats;
  if (!read_size_stat("stats.allocated", stats.allocated_bytes) ||
      !read_size_stat("stats.active", stats.active_bytes) ||
      !read_size_stat("stats.resident", stats.resident_bytes) ||
      !read_size_stat("stats.retained", stats.retained_bytes)) {
    return std::nullopt;
  }
  return stats;
}

}  // namespace ramguard
