#pragma once
// A fake /proc tree in a temporary directory, declared in test code: each process is a folder
// with statm, status, stat and a plain clear_refs file (so a test can see "5" was written).

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace ramguard::testing {

struct FakeProcess {
  std::string name = "coordinator";
  std::string comm = "coord (x) y";  // stat's comm: hostile on purpose
  std::uint32_t uid = 1000;
  std::uint64_t start_time_ticks = 4242;
  char state = 'S';
  // statm, in pages
  std::uint64_t size_pages = 100000;
  std::uint64_t resident_pages = 2560;
  std::uint64_t shared_pages = 512;
  // status, in kB
  std::uint64_t rss_kb = 10240;
  std::uint64_t hwm_kb = 20480;
  std::uint64_t anon_kb = 8192;
  std::uint64_t file_kb = 1536;
  std::uint64_t shmem_kb = 512;
  std::uint64_t swap_kb = 64;
};

inline std::string statm_text(const FakeProcess& p) {
  std::ostringstream s;
  s << p.size_pages << ' ' << p.resident_pages << ' ' << p.shared_pages << " 10 0 " << 3000
    << " 0\n";
  return s.str();
}

inline std::string status_text(const FakeProcess& p) {
  std::ostringstream s;
  if (p.state == 'Z') {  // a zombie: no address space, no memory lines
    s << "Name:\t" << p.name << "\nState:\tZ (zombie)\nUid:\t" << p.uid << '\t' << p.uid << '\t'
      << p.uid << '\t' << p.uid << "\nThreads:\t1\n";
    return s.str();
  }
  s << "Name:\t" << p.name << "\nUmask:\t0022\nState:\t" << p.state
    << " (sleeping)\nTgid:\t1\nPid:\t1\nPPid:\t0\nUid:\t" << p.uid << '\t' << p.uid << '\t' << p.uid
    << '\t' << p.uid << "\nGid:\t0\t0\t0\t0\nVmPeak:\t  999999 kB\nVmSize:\t  400000 kB\n"
    << "VmHWM:\t" << p.hwm_kb << " kB\nVmRSS:\t" << p.rss_kb << " kB\nRssAnon:\t" << p.anon_kb
    << " kB\nRssFile:\t" << p.file_kb << " kB\nRssShmem:\t" << p.shmem_kb
    << " kB\nVmData:\t 1234 kB\nVmSwap:\t" << p.swap_kb << " kB\nThreads:\t1\n";
  return s.str();
}

inline std::string stat_text(pid_t pid, const FakeProcess& p) {
  std::ostringstream s;
  s << pid << " (" << p.comm << ") " << p.state << " 1 " << pid << ' ' << pid
    << " 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 " << p.start_time_ticks
    << " 409600000 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
  return s.str();
}

class FakeProcTree {
 public:
  FakeProcTree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ramguard-proc-XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
  }
  ~FakeProcTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeProcTree(const FakeProcTree&) = delete;
  FakeProcTree& operator=(const FakeProcTree&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path dir(pid_t pid) const { return root_ / std::to_string(pid); }

  void add(pid_t pid, const FakeProcess& p) {
    std::filesystem::create_directories(dir(pid));
    write(pid, "statm", statm_text(p));
    write(pid, "status", status_text(p));
    write(pid, "stat", stat_text(pid, p));
    write(pid, "clear_refs", "");
  }
  // Rewrites the files in place (same inode): kept-open fds see the new text, like procfs.
  void update(pid_t pid, const FakeProcess& p) {
    write(pid, "statm", statm_text(p));
    write(pid, "status", status_text(p));
    write(pid, "stat", stat_text(pid, p));
  }
  void write(pid_t pid, const std::string& file, const std::string& text) const {
    std::ofstream(dir(pid) / file, std::ios::binary | std::ios::trunc) << text;
  }
  std::string read(pid_t pid, const std::string& file) const {
    std::ifstream in(dir(pid) / file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void remove(pid_t pid) {
    std::error_code ec;
    std::filesystem::remove_all(dir(pid), ec);
  }

 private:
  std::filesystem::path root_;
};

}  // namespace ramguard::testing
