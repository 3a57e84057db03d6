#include "fixtures.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ramguard::report::testing {
namespace {

constexpr double kGB = 1e9;

std::uint64_t gb(double v) {
  return static_cast<std::uint64_t>(std::llround(v * kGB));
}

v1::Reading reading(std::int64_t at_ms, double rss_gb, double file_gb) {
  v1::Reading r;
  r.set_at_unix_ms(at_ms);
  r.set_complete(true);
  r.set_rss_bytes(gb(rss_gb));
  r.set_anon_bytes(gb(rss_gb - file_gb));
  r.set_file_bytes(gb(file_gb));
  r.set_hwm_bytes(gb(rss_gb));
  return r;
}

void add_phase(v1::RunStatus& run, const char* name, std::uint32_t round, double begin_s,
               double duration_s, double peak_gb) {
  v1::PhaseStat* p = run.add_phases();
  p->set_phase(name);
  p->set_round(round);
  p->set_begin_seconds(begin_s);
  p->set_duration_seconds(duration_s);
  p->set_peak_bytes(gb(peak_gb));
  p->set_peak_exact(true);
}

v1::Verdict* add_verdict(v1::RunStatus& run, const char* kind, v1::Severity severity, bool passed,
                         std::uint32_t round, const std::string& summary, double at_s) {
  v1::Verdict* v = run.add_verdicts();
  v->set_kind(kind);
  v->set_severity(severity);
  v->set_passed(passed);
  v->set_round(round);
  v->set_run_id(run.run_id());
  v->set_summary(summary);
  v->set_at_unix_ms(kStartMs + static_cast<std::int64_t>(at_s * 1e3));
  return v;
}

}  // namespace

const BuildFigures& design_build(int index) {
  static const std::array<BuildFigures, 4> kBuilds{{
      {"baseline", 29.4, 14.1, 17.3, 26.0, true, 0},
      {"first-revision", 20.0, 9.3, 14.6, 0.6, true, 0},
      {"allocator-check", 18.6, 8.5, 13.6, 0.6, true, 0},
      {"final", 9.6, 6.4, 6.5, 0.7, false, 11.1},
  }};
  return kBuilds.at(static_cast<std::size_t>(index));
}

v1::ReportReply design_report(const BuildFigures& b) {
  v1::ReportReply reply;
  v1::RunStatus& run = *reply.mutable_run();
  run.set_run_id("r-" + b.name);
  run.set_job("vit-h14-fedavg");
  (*run.mutable_labels())["build"] = b.name;
  (*run.mutable_labels())["arch"] = "vit-h14";
  run.set_pid(4242);
  run.set_state("ended");
  run.set_model_bytes(gb(2.5));
  run.set_declared_rounds(3);
  run.set_hosts(2);
  run.set_peak_exact(true);
  run.set_peak_bytes(gb(b.peak_gb));
  run.set_round(3);
  if (b.estimate_gb > 0) run.set_estimate_bytes(gb(b.estimate_gb));
  run.set_started_unix_ms(kStartMs);
  *run.mutable_baseline() = reading(kStartMs, 0.6, 0.1);

  // Load, then per round aggregation and synchronization; save after the last round.
  add_phase(run, "load", 1, 1.0, 20.0, b.peak_gb * 0.6);
  const std::array<double, 3> gaps{6.75, 5.0, 4.5};
  double t = 22.0;
  for (std::uint32_t round = 1; round <= 3; ++round) {
    const double floor = b.first_floor_gb + (b.last_floor_gb - b.first_floor_gb) * (round - 1) / 2;
    add_phase(run, "aggregation", round, t, 30.0, round == 3 ? b.peak_gb : b.peak_gb * 0.9);
    t += 30.0 + gaps[round - 1];
    add_phase(run, "synchronization", round, t, 10.0, floor + 2.5);
    t += 10.0;
    if (round == 3) {
      add_phase(run, "save", round, t + 1.0, 8.0, floor + 2.5);
      t += 9.0;
    }
    v1::BoundaryReading* boundary = run.add_boundaries();
    boundary->set_round(round);
    *boundary->mutable_reading() =
        reading(kStartMs + static_cast<std::int64_t>(t * 1e3), floor + 0.2, 0.3);
    boundary->set_floor_bytes(gb(floor));
    t += 2.0;
  }
  const double end_s = t + 5.0;
  run.set_ended_unix_ms(kStartMs + static_cast<std::int64_t>(end_s * 1e3));
  *run.mutable_last() =
      reading(kStartMs + static_cast<std::int64_t>((end_s + 30) * 1e3), b.after_gb, 0.05);

  if (b.leak) {
    const double per_round = (b.last_floor_gb - b.first_floor_gb) / 2;
    v1::Verdict* growth =
        add_verdict(run, "growth_warning", v1::WARNING, false, 2,
                    "RSS between rounds grew " + std::to_string(per_round).substr(0, 4) +
                        " GB per round, above growth.min_bytes 0.51 GB",
                    90);
    (*growth->mutable_figures())["growth_bytes_per_round"] = per_round * kGB;
    (*growth->mutable_figures())["copies_per_round"] = per_round / 2.5;
    v1::Verdict* release =
        add_verdict(run, "release", v1::CRITICAL, false, 0,
                    "RSS did not return within 30 s: still holding above the baseline", end_s + 30);
    (*release->mutable_figures())["held_bytes"] = (b.after_gb - 0.6) * kGB;
    (*release->mutable_figures())["rss_bytes"] = b.after_gb * kGB;
    (*release->mutable_figures())["copies_held"] = (b.after_gb - 0.6) / 2.5;
  } else {
    v1::Verdict* release = add_verdict(run, "release", v1::INFO, true, 0,
                                       "RSS returned to 0.70 GB within 2.10 s", end_s + 2);
    (*release->mutable_figures())["elapsed_seconds"] = 2.1;
    for (std::uint32_t round = 1; round <= 2; ++round) {
      v1::Verdict* gap =
          add_verdict(run, "phase_gap", v1::INFO, true, round,
                      "aggregation.end -> synchronization.begin took " +
                          std::string(round == 1 ? "6.75" : "5.00") + " s, target 10 s",
                      round * 45.0);
      gap->set_phase("synchronization");
      (*gap->mutable_figures())["gap_seconds"] = gaps[round - 1];
      (*gap->mutable_figures())["target_seconds"] = 10;
    }
    v1::Verdict* accuracy = add_verdict(run, "estimate_accuracy", v1::INFO, true, 0,
                                        "peak 9.60 GB is 0.86 of the estimate 11.10 GB", end_s);
    (*accuracy->mutable_figures())["ratio"] = b.peak_gb / b.estimate_gb;
  }

  // Samples every 2 s; the older ones downsampled into min/max/last buckets.
  for (double s = 0; s <= end_s + 30; s += 2.0) {
    v1::SamplePoint* p = reply.add_samples();
    p->set_at_unix_ms(kStartMs + static_cast<std::int64_t>(s * 1e3));
    const double rss = s > end_s ? b.after_gb : 0.6 + (b.last_floor_gb - 0.6) * s / end_s;
    p->set_rss_bytes(gb(rss));
    p->set_anon_bytes(gb(rss * 0.95));
    p->set_file_bytes(gb(rss * 0.05));
    const bool downsampled = s < 40;
    p->set_min_rss_bytes(gb(downsampled ? rss * 0.9 : rss));
    p->set_max_rss_bytes(gb(downsampled ? rss * 1.1 : rss));
  }
  return reply;
}

v1::CompareReply design_compare() {
  v1::CompareReply reply;
  for (int i = 0; i < 4; ++i) {
    const BuildFigures& b = design_build(i);
    const v1::ReportReply report = design_report(b);
    v1::CompareRow* row = reply.add_rows();
    row->set_run_id(report.run().run_id());
    row->set_job(report.run().job());
    *row->mutable_labels() = report.run().labels();
    row->set_peak_bytes(gb(b.peak_gb));
    row->set_first_floor_bytes(gb(b.first_floor_gb));
    row->set_last_floor_bytes(gb(b.last_floor_gb));
    row->set_after_completion_bytes(gb(b.after_gb));
    row->set_worst_verdict(b.leak ? "release" : "");
    row->set_worst_gap_seconds(b.leak ? 0 : 6.75);
    row->set_estimate_ratio(b.estimate_gb > 0 ? b.peak_gb / b.estimate_gb : 0);
    *row->mutable_verdicts() = report.run().verdicts();
  }
  return reply;
}

// One directory per test process, removed at exit unless RAMGUARD_KEEP_TEST_FILES is set.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    path = std::filesystem::path(tmp ? tmp : "/tmp") /
           ("ramguard-report-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    if (std::getenv("RAMGUARD_KEEP_TEST_FILES") == nullptr) {
      std::filesystem::remove_all(path, ignored);
    }
  }
};

std::string write_temp(const std::string& name, const std::string& text) {
  static TempDir temp;
  const std::filesystem::path& dir = temp.path;
  const std::filesystem::path path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

int run_python_check(const std::string& script, const std::string& args) {
  const std::string command =
      std::string(RAMGUARD_TEST_PYTHON) + " " + RAMGUARD_TEST_SCRIPTS + "/" + script + " " + args;
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace ramguard::report::testing
