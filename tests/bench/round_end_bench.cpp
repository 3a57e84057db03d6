// The cost of a round end late in a long run against early: a RunMachine on a fake clock and a
// scripted process (no I/O, no store), so what is measured is the machine's own work: the mark,
// the settled floor, the growth judgement and the history it keeps. Each iteration is one round
// end and its settle. Afterwards prints
// "ratio round_end@10000/round_end@10 = X.XX (goal <= 1.2)".
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "bench/capturing_reporter.hpp"
#include "common/log.hpp"
#include "runs/run_machine.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard {
namespace {

using test::kGB;

struct LongRun {
  FakeClock clock;
  test::ScriptedProcess process{clock, 4 * kGB};
  RunParams params;
  ObserverSet observers;
  std::unique_ptr<RunMachine> machine;
  std::uint32_t round = 0;

  LongRun() {
    RunInfo info;
    info.run_id = "bench";
    info.job = "bench";
    info.target = {42, 1};
    info.declared_rounds = 0;
    auto started = RunMachine::start(info, false, process, params, observers);
    if (!started) std::abort();
    machine = std::move(started.value());
  }
  // One round end and its settle 4 s later; the floor wobbles by a few MB (no growth).
  void round_end() {
    ++round;
    process.set_rss(4 * kGB + (round % 7) * 1'000'000);
    clock.advance(std::chrono::seconds(30));
    MarkInput in;
    in.run_id = "bench";
    in.kind = MarkKind::kRoundEnd;
    auto out = machine->mark(in, process);
    if (!out) std::abort();
    clock.advance(std::chrono::seconds(4));
    machine->advance(clock.now(), &process);
  }
};

void BM_RoundEnd(benchmark::State& state) {
  const auto at_round = static_cast<std::uint32_t>(state.range(0));
  LongRun run;
  while (run.round + 1 < at_round) run.round_end();
  for (auto _ : state) run.round_end();
  state.counters["last_round"] = run.round;
}
// A fixed number of round ends from the given round: "at round 10" stays near round 10.
BENCHMARK(BM_RoundEnd)
    ->Arg(10)
    ->Arg(10000)
    ->Iterations(200)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ramguard

int main(int argc, char** argv) {
  ramguard::log::set_level(ramguard::log::Level::kError);  // verdict lines are not the subject
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ramguard::testing::CapturingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double early = reporter.real_ns("BM_RoundEnd/10");
  const double late = reporter.real_ns("BM_RoundEnd/10000");
  if (early > 0 && late > 0) {
    std::printf("\nround end at round 10     = %.2f us\n", early / 1e3);
    std::printf("round end at round 10000  = %.2f us\n", late / 1e3);
    std::printf("ratio round_end@10000/round_end@10 = %.2f (goal <= 1.2)\n", late / early);
  }
  return 0;
}
