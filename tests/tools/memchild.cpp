// memchild: a real process that allocates and frees memory on command, for integration tests,
// scenarios and the demo. One command per line on stdin; one reply line on stdout.
//
//   alloc NAME BYTES     map and touch BYTES of anonymous memory under NAME   -> ok <rss_bytes>
//   free NAME            unmap NAME                                            -> ok <rss_bytes>
//   spike BYTES MS       map+touch BYTES, hold MS milliseconds, unmap          -> ok <rss_bytes>
//   file NAME PATH BYTES write a BYTES file at PATH and map+read it (RssFile)  -> ok <rss_bytes>
//   write PATH BYTES MS  write a BYTES file at PATH over MS milliseconds and close it: page
//                        cache only (charged to the writer's memory cgroup), no RSS      -> ok
//                        <rss_bytes>
//   shm NAME PATH BYTES  create (or open) the shared-memory file PATH (e.g. /dev/shm/x), size
//                        it to BYTES, map it shared and touch it (RssShmem)    -> ok <rss_bytes>
//   worker PATH BYTES    fork a child that maps PATH shared and reads all of it (as a worker of
//                        torch.multiprocessing reads a shared tensor), then waits; it dies with
//                        this process                                          -> ok <child_pid>
//   reserve NAME BYTES   map BYTES of address space, inaccessible and never touched (no
//                        memory: a large range to place)                 -> ok <address>
//   rss                  current RSS                                           -> ok <rss_bytes>
//   sleep MS             sleep                                                 -> ok <rss_bytes>
//   exit CODE            exit with CODE
//
// Memory is mmap'ed directly so that "free" returns it to the kernel at once: the tests measure
// the guard, not the C library's allocator.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

namespace {

struct Mapping {
  void* address = nullptr;
  std::size_t bytes = 0;
};

std::map<std::string, Mapping> g_mappings;

unsigned long long rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long long size = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<unsigned long long>(sysconf(_SC_PAGESIZE));
}

bool map_anonymous(std::size_t bytes, Mapping& out) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  std::memset(p, 0x5a, bytes);  // touch every page so it is resident
  out = {p, bytes};
  return true;
}

// Maps PATH shared; `create`: sizes it to BYTES and writes every page, else reads every page.
bool map_shared(const std::string& path, std::size_t bytes, bool create, Mapping& out) {
  const int fd = ::open(path.c_str(), (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  if (create && ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    return false;
  }
  void* p = mmap(nullptr, bytes, create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  if (create) {
    std::memset(p, 0x5a, bytes);
  } else {
    volatile unsigned char sum = 0;
    const long page = sysconf(_SC_PAGESIZE);
    for (std::size_t i = 0; i < bytes; i += static_cast<std::size_t>(page)) {
      sum = static_cast<unsigned char>(sum + static_cast<const unsigned char*>(p)[i]);
    }
  }
  out = {p, bytes};
  return true;
}

// A worker: maps PATH and reads it, then waits for its parent to die.
pid_t fork_worker(const std::string& path, std::size_t bytes) {
  const pid_t child = ::fork();
  if (child != 0) return child;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  Mapping m;
  if (!map_shared(path, bytes, false, m)) std::_Exit(2);
  for (;;) ::pause();
}

void release(Mapping& m) {
  if (m.address != nullptr) munmap(m.address, m.bytes);
  m = {};
}

// A checkpoint save: written in 1 MiB chunks spread over `ms`, then closed, unmapped, never
// synced: its pages stay in the page cache.
bool write_file(const std::string& path, std::size_t bytes, long ms) {
  constexpr std::size_t kChunk = 1 << 20;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::string chunk(kChunk, 'c');
  const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
  const auto pause = std::chrono::milliseconds(chunks > 0 ? ms / static_cast<long>(chunks) : 0);
  bool ok = true;
  for (std::size_t done = 0; ok && done < bytes; done += kChunk) {
    const std::size_t n = std::min(kChunk, bytes - done);
    ok = ::write(fd, chunk.data(), n) == static_cast<ssize_t>(n);
    std::this_thread::sleep_for(pause);
  }
  return ::close(fd) == 0 && ok;
}

bool map_file(const std::string& path, std::size_t bytes, Mapping& out) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  std::string block(1 << 20, 'f');
  for (std::size_t written = 0; written < bytes;) {
    std::size_t n = std::min(block.size(), bytes - written);
    if (write(fd, block.data(), n) != static_cast<ssize_t>(n)) {
      close(fd);
      return false;
    }
    written += n;
  }
  void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return false;
  volatile unsigned char sum = 0;
  const long page = sysconf(_SC_PAGESIZE);
  for (std::size_t i = 0; i < bytes; i += static_cast<std::size_t>(page)) {
    sum = static_cast<unsigned char>(sum + static_cast<const unsigned char*>(p)[i]);
  }
  out = {p, bytes};
  return true;
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd, name, path;
    in >> cmd;
    bool ok = true;
    if (cmd == "alloc") {
      std::size_t bytes = 0;
      ok = static_cast<bool>(in >> name >> bytes);
      if (ok) {
        release(g_mappings[name]);
        ok = map_anonymous(bytes, g_mappings[name]);
      }
    } else if (cmd == "free") {
      ok = static_cast<bool>(in >> name) && g_mappings.count(name) > 0;
      if (ok) {
        release(g_mappings[name]);
        g_mappings.erase(name);
      }
    } else if (cmd == "spike") {
      std::size_t bytes = 0;
      long ms = 0;
      Mapping m;
      ok = static_cast<bool>(in >> bytes >> ms) && map_anonymous(bytes, m);
      if (ok) {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        release(m);
      }
    } else if (cmd == "file") {
      std::size_t bytes = 0;
      ok = static_cast<bool>(in >> name >> path >> bytes);
      if (ok) {
        release(g_mappings[name]);
        ok = map_file(path, bytes, g_mappings[name]);
      }
    } else if (cmd == "write") {
      std::size_t bytes = 0;
      long ms = 0;
      ok = static_cast<bool>(in >> path >> bytes >> ms) && write_file(path, bytes, ms);
    } else if (cmd == "shm") {
      std::size_t bytes = 0;
      ok = static_cast<bool>(in >> name >> path >> bytes);
      if (ok) {
        release(g_mappings[name]);
        ok = map_shared(path, bytes, true, g_mappings[name]);
      }
    } else if (cmd == "worker") {
      std::size_t bytes = 0;
      ok = static_cast<bool>(in >> path >> bytes);
      if (ok) {
        const pid_t worker = fork_worker(path, bytes);
        ok = worker > 0;
        if (ok) {
          std::cout << "ok " << worker << std::endl;
          continue;
        }
      }
    } else if (cmd == "reserve") {
      std::size_t bytes = 0;
      ok = static_cast<bool>(in >> name >> bytes);
      if (ok) {
        release(g_mappings[name]);
        void* p =
            mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        ok = p != MAP_FAILED;
        if (ok) {
          g_mappings[name] = {p, bytes};
          std::cout << "ok " << reinterpret_cast<std::uintptr_t>(p) << std::endl;
          continue;
        }
        g_mappings.erase(name);
      }
    } else if (cmd == "sleep") {
      long ms = 0;
      ok = static_cast<bool>(in >> ms);
      if (ok) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    } else if (cmd == "exit") {
      int code = 0;
      in >> code;
      std::cout << "ok " << rss_bytes() << std::endl;
      std::_Exit(code);
    } else if (cmd != "rss") {
      ok = false;
    }
    if (ok) {
      std::cout << "ok " << rss_bytes() << std::endl;
    } else {
      std::cout << "error " << line << std::endl;
    }
  }
  return 0;
}
