#include "sampling/sampler.hpp"

#include <algorithm>

#include "common/log.hpp"

namespace ramguard {
namespace {
constexpr std::chrono::nanoseconds kMinInterval = std::chrono::milliseconds(1);
}

Sampler::Sampler(asio::io_context& io, ProcFs& procfs, const Clock& clock,
                 std::chrono::nanoseconds interval)
    : procfs_(procfs), clock_(clock), interval_(std::max(interval, kMinInterval)), timer_(io) {}

Sampler::~Sampler() {
  *alive_ = false;
  timer_.cancel();
  if (events_ != nullptr) {
    events_->set_follower({});
    events_->follow_forks(false);
  }
}

void Sampler::follow_forks(ProcEvents& events) {
  events_ = &events;
  events.set_follower({.fork = [this](const ProcFork& fork) { on_fork(fork); },
                       .exit = [this](pid_t pid) { on_exit(pid); },
                       .lost =
                           [this] {
                             for (auto& [key, target] : targets_) target->walk_due = true;
                           }});
  events.follow_forks(trees_ > 0);
}

void Sampler::on_fork(const ProcFork& fork) {
  if (trees_ == 0) return;
  for (auto& [key, target] : targets_) {
    if (target->tree && target->tree->contains(fork.parent)) target->tree->adopt(fork.child);
  }
}

void Sampler::on_exit(pid_t pid) {
  if (trees_ == 0) return;
  for (auto& [key, target] : targets_) {
    if (target->tree && target->tree->contains(pid)) target->walk_due = true;
  }
}

void Sampler::count_tree(int delta) {
  trees_ = static_cast<std::size_t>(static_cast<long long>(trees_) + delta);
  if (events_ != nullptr) events_->follow_forks(trees_ > 0);
}

void Sampler::refresh_tree(Target& target, bool complete) {
  // A mark's reading sees every fork queued so far.
  if (events_ != nullptr && complete) events_->catch_up();
  const bool walk = events_ == nullptr || target.walk_due ||
                    ++target.readings_since_walk >= kTreeWalkEveryReadings;
  if (!walk) return;
  target.tree->refresh();
  target.readings_since_walk = 0;
  target.walk_due = false;
  ++tree_walks_;
}

void Sampler::start() {
  if (running_) return;
  running_ = true;
  next_deadline_ = asio::steady_timer::clock_type::now();
  schedule();
}

void Sampler::stop() {
  running_ = false;
  ++generation_;
  timer_.cancel();
}

void Sampler::schedule() {
  // Fixed cadence: the next deadline follows the previous one, not the end of the last tick.
  // After an overrun (a stalled loop) it restarts from now instead of firing a burst.
  const auto now = asio::steady_timer::clock_type::now();
  next_deadline_ += std::chrono::duration_cast<asio::steady_timer::duration>(interval_);
  if (next_deadline_ < now) {
    next_deadline_ = now + std::chrono::duration_cast<asio::steady_timer::duration>(interval_);
  }
  timer_.expires_at(next_deadline_);
  // A generation tells a stale completion (from before stop or set_interval) to do nothing.
  const std::uint64_t generation = ++generation_;
  timer_.async_wait([this, alive = alive_, generation](const asio::error_code& ec) {
    if (!*alive || ec || generation != generation_) return;
    tick();
    if (*alive && running_ && generation == generation_) schedule();
  });
}

void Sampler::tick() {
  const auto began = std::chrono::steady_clock::now();
  // A sink may add or remove targets: walk a snapshot, skipping those removed meanwhile
  // (the snapshot keeps them alive until the tick ends).
  tick_targets_.clear();
  for (const auto& [key, target] : targets_) tick_targets_.push_back(target);
  for (const std::shared_ptr<Target>& target : tick_targets_) {
    if (target->removed) continue;
    const Result<MemoryReading> reading = timed_read(*target, false);
    if (target->sink) target->sink(target->handle.id(), reading, target->timing);
  }
  tick_targets_.clear();  // removed targets close their files now, not at the next tick
  ++ticks_;
  last_sample_duration_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

Result<MemoryReading> Sampler::timed_read(Target& target, bool complete) {
  const Instant at = clock_.now();
  Result<MemoryReading> reading = read_target(target, at, complete);
  const std::chrono::nanoseconds took = clock_.monotonic() - at.monotonic;
  ReadTiming& timing = target.timing;
  timing.last_seconds = std::chrono::duration<double>(took).count();
  if (took > slow_read_ && timing.slow_reads++ == 0) {
    // Once per target: the counter in /metrics tells how often after that.
    const char* scope = target.cgroup ? "cgroup" : target.tree ? "tree" : "process";
    log::warning("sampling.slow_read",
                 {{"target", target.name.empty() ? "pid-" + std::to_string(target.handle.pid())
                                                 : target.name},
                  {"pid", target.handle.pid()},
                  {"scope", scope},
                  {"read_seconds", timing.last_seconds},
                  {"threshold_seconds", std::chrono::duration<double>(slow_read_).count()}});
  }
  return reading;
}

Result<MemoryReading> Sampler::read_target(Target& target, const Instant& at, bool complete) {
  if (target.cgroup) {
    // The process's own statm first: its exit (or zombie) must still end the run.
    if (auto alive = target.handle.read_statm(at); !alive) return alive.error();
    return complete ? target.cgroup->read_complete(at) : target.cgroup->read_periodic(at);
  }
  auto own = complete ? target.handle.read_complete(at) : target.handle.read_periodic(at);
  if (!own || !target.tree) return own;  // a tree's root that exited ends the run
  refresh_tree(target, complete);
  MemoryReading tree = target.tree->add_descendants(*own, at, complete, &target.handle);
  // A member found gone may have left children, re-parented away: its exit event, if it comes
  // after this reading, no longer names a member.
  if (target.tree->gone_at_last_reading() > 0) target.walk_due = true;
  return tree;
}

Result<TargetKey> Sampler::add(pid_t pid, ReadingSink sink, std::string name) {
  auto handle = procfs_.open(pid);
  if (!handle) return handle.error();
  const TargetKey key = next_key_++;
  auto target = std::make_shared<Target>(
      Target{std::move(*handle), std::move(sink), std::nullopt, std::nullopt});
  target->name = std::move(name);
  targets_.emplace(key, std::move(target));
  return key;
}

Status Sampler::attach(TargetKey key, Scope scope, std::optional<CgroupMemory> cgroup) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return unknown(key);
  if (cgroup.has_value() != (scope == Scope::kCgroup)) {
    return Error{std::string("the ") + scope_name(scope) + " scope " +
                 (cgroup ? "takes no cgroup" : "needs its cgroup")};
  }
  Target& target = *it->second;
  switch (scope) {
    case Scope::kProcess:
      break;
    case Scope::kCgroup:
      target.cgroup.emplace(std::move(*cgroup));
      break;
    case Scope::kTree:
      if (target.tree) break;
      count_tree(+1);  // forks followed before the walk: none falls between the two
      target.tree.emplace(procfs_, target.handle.pid());
      refresh_tree(target, false);
      break;
  }
  return ok_status();
}

Result<std::uint64_t> Sampler::cgroup_oom_kills(TargetKey key) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return unknown(key);
  if (!it->second->cgroup) return Error{"target " + std::to_string(key) + " has no cgroup scope"};
  return it->second->cgroup->oom_kills();
}

Result<CgroupPeak> Sampler::cgroup_peak(TargetKey key) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return unknown(key);
  if (!it->second->cgroup) return Error{"target " + std::to_string(key) + " has no cgroup scope"};
  CgroupMemory& cgroup = *it->second->cgroup;
  auto peak = cgroup.peak_usage_bytes();
  if (!peak) return peak.error();
  auto limit = cgroup.own_limit_bytes();
  return CgroupPeak{*peak, limit ? *limit : 0};
}

std::uint64_t Sampler::last_hwm_bytes(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end() || it->second->cgroup || it->second->tree) return 0;
  return it->second->handle.last_hwm_bytes();
}

Result<std::vector<SharedSegment>> Sampler::shared_segments(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end()) return unknown(key);
  const Target& target = *it->second;
  if (target.cgroup) return std::vector<SharedSegment>{};
  auto own = target.handle.read_shared_segments();
  if (!own) return own.error();
  if (!target.tree) return own;
  std::vector<SharedSegment> all = target.tree->shared_segments();
  all.insert(all.end(), own->begin(), own->end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end(),
                        [](const SharedSegment& a, const SharedSegment& b) {
                          return !(a < b) && !(b < a);
                        }),
            all.end());
  return all;
}

std::vector<ProcessShare> Sampler::tree_shares(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end() || !it->second->tree) return {};
  return it->second->tree->shares();
}

std::vector<TargetId> Sampler::tree_processes(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end() || !it->second->tree) return {};
  std::vector<TargetId> out{it->second->handle.id()};
  for (TargetId& member : it->second->tree->members()) out.push_back(member);
  return out;
}

std::optional<std::filesystem::path> Sampler::cgroup_dir(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end() || !it->second->cgroup) return std::nullopt;
  return it->second->cgroup->dir();
}

Result<TargetKey> Sampler::add(const TargetId& id, ReadingSink sink, std::string name) {
  auto key = add(id.pid, std::move(sink), std::move(name));
  if (!key) return key;
  if (!(*target(*key) == id)) {
    remove(*key);
    return Error{"cannot watch PID " + std::to_string(id.pid) +
                 ": the PID now names another process (start time differs)"};
  }
  return key;
}

void Sampler::remove(TargetKey key) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return;
  it->second->removed = true;
  if (it->second->tree) count_tree(-1);
  targets_.erase(it);
}

Error Sampler::unknown(TargetKey key) const {
  return Error{"no sampled target with key " + std::to_string(key)};
}

Result<MemoryReading> Sampler::read_now(TargetKey key, bool complete) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return unknown(key);
  return timed_read(*it->second, complete);
}

ReadTiming Sampler::read_timing(TargetKey key) const {
  auto it = targets_.find(key);
  return it == targets_.end() ? ReadTiming{} : it->second->timing;
}

void Sampler::note_pss_read(TargetKey key, double seconds) {
  auto it = targets_.find(key);
  if (it != targets_.end()) it->second->timing.last_pss_seconds = seconds;
}

Status Sampler::reset_hwm(TargetKey key) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return unknown(key);
  if (it->second->cgroup) return it->second->cgroup->reset_peak();
  Status root = it->second->handle.reset_hwm();
  if (it->second->tree) {
    Status descendants = it->second->tree->reset_hwm();
    if (root.ok()) return descendants;
  }
  return root;
}

Result<bool> Sampler::is_same_process(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end()) return unknown(key);
  return it->second->handle.is_same_process();
}

std::optional<TargetId> Sampler::target(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end()) return std::nullopt;
  return it->second->handle.id();
}

std::optional<std::uint32_t> Sampler::owner_uid(TargetKey key) const {
  auto it = targets_.find(key);
  if (it == targets_.end()) return std::nullopt;
  return it->second->handle.uid();
}

void Sampler::set_interval(std::chrono::nanoseconds interval) {
  interval_ = std::max(interval, kMinInterval);
  if (!running_) return;
  // Re-arm so a shorter interval does not wait out the old, longer one.
  next_deadline_ = asio::steady_timer::clock_type::now();
  schedule();
}

}  // namespace ramguard
