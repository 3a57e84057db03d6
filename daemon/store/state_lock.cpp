#include "store/state_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ramguard {
namespace {

std::string errno_message(int err) {
  char buf[256];
  return strerror_r(err, buf, sizeof buf);
}

// The PID the holder wrote, if the file holds one.
std::optional<long> holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return std::nullopt;
  char* end = nullptr;
  const long pid = std::strtol(buf, &end, 10);
  if (end == buf || pid <= 0) return std::nullopt;
  return pid;
}

}  // namespace

Result<std::unique_ptr<StateLock>> StateLock::acquire(const std::filesystem::path& state_dir) {
  if (auto s = prepare_state_dir(state_dir); !s) return s.error();
  const std::filesystem::path file = state_dir / kFileName;
  bool writable = true;
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  std::filesystem::path locked = file;
  if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
    // A read-only ledger is still one daemon's: lock what exists without writing.
    writable = false;
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      fd = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      locked = state_dir;
    }
  }
  if (fd < 0) {
    return Error{"cannot open the ledger lock " + file.string() + ": " + errno_message(errno)};
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const auto pid = holder_pid(fd);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Error{"another ramguardd" + (pid ? " (pid " + std::to_string(*pid) + ")" : "") +
                   " holds the ledger lock " + locked.string() +
                   ": one daemon per state directory; stop it or use another state_dir"};
    }
    return Error{"cannot lock " + locked.string() + ": " + errno_message(err)};
  }
  if (writable) {
    // Best effort: without the PID the lock still holds, only a refusal message is poorer.
    const std::string text = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, text.data(), text.size(), 0);
  }
  return std::unique_ptr<StateLock>(new StateLock(fd, locked));
}

StateLock::~StateLock() {
  // Closing drops the flock. The file stays: removing it would race a daemon that just opened
  // it and let two daemons lock two different files.
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ramguard
