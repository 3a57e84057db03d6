#pragma once
// Test doubles for the run state machine: a scripted process (what the next reading shows)
// on a fake clock, and an observer that records every event and can refuse writes.

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "runs/observer.hpp"
#include "runs/target_probe.hpp"

namespace ramguard::test {

inline constexpr std::uint64_t kGB = 1'000'000'000;

// The process as the machine sees it: RSS now, and the high-water mark since the last reset.
class ScriptedProcess final : public TargetProbe {
 public:
  explicit ScriptedProcess(const FakeClock& clock, std::uint64_t rss_bytes)
      : clock_(clock), rss_(rss_bytes), hwm_(rss_bytes) {}

  void set_rss(std::uint64_t rss_bytes) {
    rss_ = rss_bytes;
    hwm_ = std::max(hwm_, rss_bytes);
  }
  // A spike between readings: only the high-water mark remembers it.
  void spike(std::uint64_t peak_bytes) { hwm_ = std::max(hwm_, peak_bytes); }
  void fail_reads(bool fail) { fail_ = fail; }
  void deny_reset(bool deny) { deny_reset_ = deny; }

  MemoryReading periodic() const {
    MemoryReading r;
    r.at = clock_.now();
    r.rss_bytes = rss_;
    r.anon_bytes = rss_;
    return r;
  }

  Result<MemoryReading> read(bool complete) override {
    ++reads;
    if (fail_) return Error{"process 42 has exited", ErrorKind::kNotFound};
    MemoryReading r = periodic();
    if (complete) {
      r.source = ReadingSource::kMark;
      r.hwm_bytes = hwm_;
    }
    return r;
  }
  Status reset_hwm() override {
    if (deny_reset_) return Error{"clear_refs: permission denied"};
    ++resets;
    hwm_ = rss_;
    return ok_status();
  }

  int reads = 0;
  int resets = 0;

 private:
  const FakeClock& clock_;
  std::uint64_t rss_;
  std::uint64_t hwm_;
  bool fail_ = false;
  bool deny_reset_ = false;
};

class RecordingObserver final : public RunObserver {
 public:
  explicit RecordingObserver(bool durable = true) : durable_(durable) {}
  bool durable() const override { return durable_; }
  void refuse_writes(bool refuse) { refuse_ = refuse; }

  Status run_started(const RunLedger&) override { return record("run_started"); }
  Status marked(const RunLedger&, const MarkRecord&, const PhaseRecord*,
                const BoundaryRecord*) override {
    return record("marked");
  }
  Status boundary_settled(const RunLedger&, const BoundaryRecord& b) override {
    settled_floors.push_back(b.floor_bytes);
    return record("boundary_settled");
  }
  Status verdict(const RunLedger&, const Verdict& v) override {
    verdicts.push_back(v);
    return record("verdict");
  }
  Status run_finished(const RunLedger& ledger,
                      const std::vector<const PhaseRecord*>& closed) override {
    finished_state = ledger.state;
    closed_phases = closed.size();
    return record("run_finished");
  }
  void target_state(const TargetRef&, bool readable, std::string_view reason) override {
    last_readable = readable;
    last_reason = std::string(reason);
  }
  void target_retired(const TargetRef&, Instant) override { ++retired; }
  void store_failed(std::string_view what, std::string_view) override {
    failures.emplace_back(what);
  }

  std::vector<std::string> events;
  std::vector<Verdict> verdicts;
  std::vector<std::uint64_t> settled_floors;
  std::vector<std::string> failures;
  RunState finished_state = RunState::kActive;
  std::size_t closed_phases = 0;
  bool last_readable = true;
  std::string last_reason;
  int retired = 0;

 private:
  Status record(const char* event) {
    events.emplace_back(event);
    if (refuse_) return Error{"disk full"};
    return ok_status();
  }
  bool durable_;
  bool refuse_ = false;
};

}  // namespace ramguard::test
