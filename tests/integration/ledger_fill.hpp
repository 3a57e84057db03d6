#pragma once
// Brings a run in a stopped daemon's ledger to `marks` marks, as a run at its bound leaves it:
// train phases begun and ended, each ended phase saved. Written straight into the file, which
// takes a second rather than the minutes 100,000 marks through the socket take on a loaded
// machine.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "store/store.hpp"

namespace ramguard::testing {

inline void fill_run_to(Store& store, const std::string& run_id, std::uint64_t marks) {
  auto run = store.load_run(run_id);
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_FALSE(run->marks.empty());
  const MarkRecord last = run->marks.back();
  ASSERT_TRUE(store.atomically([&]() -> Status {
    for (std::uint64_t seq = last.seq + 1; seq <= marks; ++seq) {
      MarkRecord m = last;
      m.seq = seq;
      m.kind = seq % 2 == 0 ? MarkKind::kPhaseBegin : MarkKind::kPhaseEnd;
      m.phase = "train";
      m.round = 1;
      m.reading.at.monotonic += std::chrono::microseconds(seq);
      m.reading.at.wall += std::chrono::microseconds(seq);
      if (auto s = store.append_mark(run_id, m); !s) return s;
      if (m.kind != MarkKind::kPhaseEnd) continue;
      // The phase that mark ends, as the daemon saves it.
      PhaseRecord phase{"train", 1, m.reading.at, m.reading.at, m.reading.rss_bytes, true};
      phase.begin.monotonic -= std::chrono::microseconds(1);
      phase.begin.wall -= std::chrono::microseconds(1);
      if (auto s = store.save_phase(run_id, phase); !s) return s;
    }
    return ok_status();
  }));
}

}  // namespace ramguard::testing
