#pragma once
// The control socket's file: binding it with its mode, telling a stale socket from a live
// daemon's, and knowing which file is ours (device and inode) so the daemon notices when the
// path was removed or replaced, and on shutdown removes only the socket it created.

#include <sys/types.h>

#include <asio.hpp>
#include <filesystem>
#include <memory>
#include <optional>

#include "ramguard/base/result.hpp"

namespace ramguard::control {

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

// The identity of whatever is at `path` now (not following a symlink); nullopt when nothing.
std::optional<FileIdentity> identity_of(const std::filesystem::path& path);

// True when something accepts connections on `path`: then it is a live daemon, not stale.
bool someone_listens(const std::filesystem::path& path);

struct BoundSocket {
  std::shared_ptr<asio::local::stream_protocol::acceptor> acceptor;
  FileIdentity identity;
};

// Binds and listens on `path` with `mode` from the start, and gives the file to `group` (when
// set) before it listens. A leftover socket file is replaced only when no daemon answers on it;
// anything else at the path is an error naming it.
Result<BoundSocket> bind_socket_file(asio::io_context& io, const std::filesystem::path& path,
                                     mode_t mode, std::optional<gid_t> group = std::nullopt);

}  // namespace ramguard::control
