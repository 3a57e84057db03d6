#include "procfs/process_tree.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <set>
#include <span>
#include <string>
#include <utility>

namespace ramguard {
namespace {

constexpr std::size_t kMaxChildrenFileBytes = 64 * 1024;

void parse_pids(std::string_view text, std::vector<pid_t>& out) {
  while (!text.empty()) {
    const std::size_t space = text.find_first_of(" \n");
    const std::string_view word = text.substr(0, space);
    pid_t pid = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), pid);
    if (ec == std::errc() && end == word.data() + word.size() && pid > 0) out.push_back(pid);
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
}

}  // namespace

std::vector<pid_t> read_children(const std::filesystem::path& proc_root, pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  std::filesystem::directory_iterator tasks(proc_root / std::to_string(pid) / "task", ec);
  if (ec) return out;  // gone, or no task directory (a fixture): no children
  for (const auto& task : tasks) {
    auto text = read_small_file(task.path() / "children", kMaxChildrenFileBytes);
    if (text) parse_pids(*text, out);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ProcessTree::refresh() {
  std::set<pid_t> seen;
  std::deque<pid_t> pending{root_};
  while (!pending.empty()) {
    const pid_t parent = pending.front();
    pending.pop_front();
    for (const pid_t child : read_children(procfs_->root(), parent)) {
      if (child == root_ || !seen.insert(child).second) continue;
      if (!members_.contains(child)) {
        auto handle = procfs_->open(child);
        if (!handle) continue;  // exited meanwhile, or a zombie: nothing to sum
        members_.emplace(child, std::move(*handle));
      }
      pending.push_back(child);
    }
  }
  // Orphans re-parented away from the tree (their parent exited) are no longer its members.
  std::erase_if(members_, [&](const auto& member) { return !seen.contains(member.first); });
}

void ProcessTree::adopt(pid_t child) {
  if (contains(child)) return;
  auto handle = procfs_->open(child);
  if (handle) members_.emplace(child, std::move(*handle));
}

MemoryReading ProcessTree::add_descendants(MemoryReading root, const Instant& at, bool complete,
                                           const ProcessHandle* root_handle) {
  gone_.clear();
  if (complete) {
    shares_.clear();
    auto comm = read_small_file(procfs_->root() / std::to_string(root_) / "comm", 64);
    std::string name = comm ? *comm : std::string("?");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    shares_.push_back({root_, std::move(name), root.counted_bytes(), true});
  }
  // Processes holding shared memory, for the count-once pass below.
  std::vector<std::pair<const ProcessHandle*, std::uint64_t>> with_shmem;
  if (root.shmem_bytes > 0 && root_handle != nullptr) {
    with_shmem.emplace_back(root_handle, root.shmem_bytes);
  }
  for (auto& [pid, handle] : members_) {
    auto r = complete ? handle.read_complete(at) : handle.read_periodic(at);
    if (!r) {
      gone_.push_back(pid);
      continue;
    }
    if (complete) shares_.push_back({pid, handle.read_comm(), r->counted_bytes(), false});
    if (r->shmem_bytes > 0) with_shmem.emplace_back(&handle, r->shmem_bytes);
    root.rss_bytes += r->rss_bytes;
    root.anon_bytes += r->anon_bytes;
    root.file_bytes += r->file_bytes;
    root.shmem_bytes += r->shmem_bytes;
    root.swap_bytes += r->swap_bytes;
    root.hwm_bytes += r->hwm_bytes;
  }
  for (const pid_t pid : gone_) {
    members_.erase(pid);
    segments_.erase(pid);
  }
  // Shared memory counts once: an object several members map is summed once (its allocated
  // pages), not once per mapper. What cannot be identified keeps each mapper's RssShmem.
  if (with_shmem.size() >= 2) {
    std::vector<std::pair<const std::vector<SharedSegment>*, std::uint64_t>> mappers;
    mappers.reserve(with_shmem.size());
    for (const auto& [handle, shmem_bytes] : with_shmem) {
      mappers.emplace_back(segments_of(*handle, shmem_bytes), shmem_bytes);
    }
    const std::uint64_t once = shmem_counted_once(mappers);
    if (once < root.shmem_bytes) {
      const std::uint64_t duplicate = root.shmem_bytes - once;
      root.shmem_bytes = once;
      root.rss_bytes -= std::min(duplicate, root.rss_bytes);
      root.hwm_bytes -= std::min(duplicate, root.hwm_bytes);
    }
  }
  return root;
}

const std::vector<SharedSegment>* ProcessTree::segments_of(const ProcessHandle& handle,
                                                           std::uint64_t rss_shmem_bytes) {
  Segments& cached = segments_[handle.pid()];
  if (cached.readings == 0 || cached.rss_shmem_bytes != rss_shmem_bytes ||
      cached.readings >= kSegmentsRereadEvery) {
    auto read = handle.read_shared_segments();
    cached.known = read.ok();
    cached.objects = read ? std::move(*read) : std::vector<SharedSegment>{};
    cached.rss_shmem_bytes = rss_shmem_bytes;
    cached.readings = 0;
  }
  ++cached.readings;
  return cached.known ? &cached.objects : nullptr;
}

std::uint64_t shmem_counted_once(
    std::span<const std::pair<const std::vector<SharedSegment>*, std::uint64_t>> mappers) {
  std::set<SharedSegment> objects;
  std::uint64_t unidentified = 0;
  for (const auto& [segments, rss_shmem_bytes] : mappers) {
    if (segments == nullptr) {
      unidentified += rss_shmem_bytes;
      continue;
    }
    std::uint64_t identified = 0;
    for (const SharedSegment& seg : *segments) {
      identified += seg.bytes;
      objects.insert(seg);
    }
    // Shmem this process maps beyond the objects named (a size not readable): its own count.
    if (rss_shmem_bytes > identified) unidentified += rss_shmem_bytes - identified;
  }
  std::uint64_t total = unidentified;
  for (const SharedSegment& seg : objects) total += seg.bytes;
  return total;
}

std::vector<SharedSegment> ProcessTree::shared_segments() const {
  std::set<SharedSegment> objects;
  for (const auto& [pid, handle] : members_) {
    if (auto segments = handle.read_shared_segments())
      objects.insert(segments->begin(), segments->end());
  }
  return {objects.begin(), objects.end()};
}

std::vector<TargetId> ProcessTree::members() const {
  std::vector<TargetId> out;
  out.reserve(members_.size());
  for (const auto& [pid, handle] : members_) out.push_back(handle.id());
  return out;
}

Status ProcessTree::reset_hwm() {
  Status first = ok_status();
  for (auto& [pid, handle] : members_) {
    if (Status s = handle.reset_hwm(); !s && first.ok()) first = s;
  }
  return first;
}

}  // namespace ramguard
