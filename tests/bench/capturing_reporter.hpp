#pragma once
// What every benchmark's summary divides: prints as usual and keeps each benchmark's real time
// per iteration, in ns, by its name ("BM_StatmSum/8"). A benchmark run with repetitions is kept
// by its median ("BM_RoundEnd/10_median" is kept as "BM_RoundEnd/10").
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace ramguard::testing {

class CapturingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool plain = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
      if (!plain && run.aggregate_name != "median") continue;
      std::string name = run.run_name.function_name;
      if (!run.run_name.args.empty()) name += "/" + run.run_name.args;
      real_ns_[name] =
          run.GetAdjustedRealTime() * 1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // 0 when the benchmark did not run (filtered out, or it failed).
  double real_ns(const std::string& name) const {
    auto it = real_ns_.find(name);
    return it == real_ns_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, double> real_ns_;
};

}  // namespace ramguard::testing
