#pragma once
// One daemon per ledger: an exclusive flock on <state_dir>/ramguard.lock, held for the life of
// the process (the kernel drops it when the process dies, kill -9 included, so there is no
// stale lock to clean up). The holder writes its PID into the file so a refused daemon can
// name it. Take it before anything opens the database.

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "ramguard/base/result.hpp"

namespace ramguard {

class StateLock {
 public:
  static constexpr const char* kFileName = "ramguard.lock";

  // Creates state_dir (mode 0750) if missing and takes the lock without waiting. Error when
  // another process holds it: names the lock file and, when it wrote one, the holder's PID.
  // On a read-only state directory it locks the existing lock file (or the directory itself)
  // without writing the PID.
  static Result<std::unique_ptr<StateLock>> acquire(const std::filesystem::path& state_dir);
  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  StateLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::filesystem::path path_;
};

// Creates the state directory with mode 0750 when missing; errors name it.
Status prepare_state_dir(const std::filesystem::path& dir);

}  // namespace ramguard
