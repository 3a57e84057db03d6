#include "ramguard/allocator_probe.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace ramguard {
namespace {

using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

// jemalloc's mallctl when this process runs under jemalloc (linked or preloaded).
Mallctl find_mallctl() {
  return reinterpret_cast<Mallctl>(::dlsym(RTLD_DEFAULT, "mallctl"));
}

bool read_size(Mallctl mallctl, const char* name, std::uint64_t& out) {
  std::size_t value = 0;
  std::size_t len = sizeof value;
  if (mallctl(name, &value, &len, nullptr, 0) != 0) return false;
  out = value;
  return true;
}

void probe_jemalloc(Mallctl mallctl, AllocatorProbe& p) {
  p.allocator = "jemalloc";
  // Statistics are a snapshot refreshed by writing the epoch.
  std::uint64_t epoch = 1;
  std::size_t len = sizeof epoch;
  mallctl("epoch", &epoch, &len, &epoch, len);
  std::uint64_t allocated = 0, active = 0, resident = 0;
  if (!read_size(mallctl, "stats.allocated", allocated) ||
      !read_size(mallctl, "stats.active", active) ||
      !read_size(mallctl, "stats.resident", resident)) {
    p.reason = "jemalloc's mallctl has no stats (built without --enable-stats?)";
    return;
  }
  p.stats.set_allocated_bytes(allocated);
  p.stats.set_active_bytes(active);
  p.stats.set_resident_bytes(resident);
  p.stats.set_retained_bytes(resident > allocated ? resident - allocated : 0);
  p.available = true;
}

void probe_glibc(AllocatorProbe& p) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  p.allocator = "glibc";
  const struct mallinfo2 m = ::mallinfo2();
  const std::uint64_t live = m.uordblks + m.hblkhd;
  p.stats.set_allocated_bytes(live);
  p.stats.set_active_bytes(live);
  p.stats.set_resident_bytes(m.arena + m.hblkhd);
  p.stats.set_retained_bytes(m.fordblks);
  p.available = true;
#else
  p.reason = "mallinfo2() needs glibc 2.33 or later";
#endif
}

std::uint64_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

AllocatorProbe probe_allocator() {
  const auto started = std::chrono::steady_clock::now();
  AllocatorProbe p;
  if (Mallctl mallctl = find_mallctl()) {
    probe_jemalloc(mallctl, p);
  } else {
    probe_glibc(p);
  }
  if (p.available) p.stats.set_allocator(p.allocator);
  p.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return p;
}

std::optional<v1::AllocatorStats> allocator_stats() {
  AllocatorProbe p = probe_allocator();
  if (!p.available) return std::nullopt;
  return std::move(p.stats);
}

std::optional<v1::TrimProbe> trim_allocator() {
  const auto started = std::chrono::steady_clock::now();
  v1::TrimProbe t;
  t.set_rss_before_bytes(rss_bytes());
  if (Mallctl mallctl = find_mallctl()) {
    // MALLCTL_ARENAS_ALL is 4096 in jemalloc 5.
    if (mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) != 0) return std::nullopt;
  } else {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#else
    return std::nullopt;
#endif
  }
  t.set_rss_after_bytes(rss_bytes());
  t.set_duration_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return t;
}

}  // namespace ramguard
