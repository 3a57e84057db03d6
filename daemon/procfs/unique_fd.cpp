#include "procfs/unique_fd.hpp"

#include <unistd.h>

#include <cstring>

namespace ramguard {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns the message, possibly not in buf.
  return ::strerror_r(err, buf, sizeof buf);
}

}  // namespace ramguard
