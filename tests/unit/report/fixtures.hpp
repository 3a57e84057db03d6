#pragma once
// Protocol messages for the report tests, modelled on the four builds of a ViT-H/14
// coordinator in daemon/README.md (three rounds, two hosts, one fp32 model copy 2.5 GB).

#include <string>

#include "ramguard.pb.h"

namespace ramguard::report::testing {

struct BuildFigures {
  std::string name;  // label build=<name>
  double peak_gb;
  double first_floor_gb;
  double last_floor_gb;
  double after_gb;
  bool leak;           // growth warning and failed release
  double estimate_gb;  // 0: no estimate
};

// baseline, first memory revision, allocator-setting check, final revision.
const BuildFigures& design_build(int index);

inline constexpr std::int64_t kStartMs = 1714560000000;  // 2024-05-01 10:40:00 UTC

// A finished run with phases, boundaries, verdicts and samples (every 7th downsampled).
v1::ReportReply design_report(const BuildFigures& build);
v1::CompareReply design_compare();

// Writes `text` to a fresh file under the test temp dir; returns the path.
std::string write_temp(const std::string& name, const std::string& text);
// Runs one of the python checks in tests/unit/report with the given arguments; returns its exit
// status (0: passed). Output goes to the test log.
int run_python_check(const std::string& script, const std::string& args);

}  // namespace ramguard::report::testing
