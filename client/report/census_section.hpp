#pragma once
// "What holds the memory": the client's censuses in the report (text and JSON), with what was
// born and what died between two censuses, and the gap to the counted memory.

#include <string>
#include <vector>

#include "ramguard.pb.h"
#include "report/json_writer.hpp"

namespace ramguard::report {

struct HolderChanges {
  std::vector<std::string> born;  // holders in `after` and not in `before`
  std::vector<std::string> died;  // the reverse
};
HolderChanges holder_changes(const v1::Census& before, const v1::Census& after);

void census_text_section(const v1::RunStatus& run, bool binary_units, std::string& out);
// The status's line for a run's newest census: "census at round 3: largest holder
// `server.state` 2.00 GB, unexplained 0.31 GB"; "" without one.
std::string census_status_line(const v1::RunStatus& run, bool binary_units);
// The report JSON's "holders" array (report.schema.json).
void census_json(JsonWriter& w, const v1::RunStatus& run);

}  // namespace ramguard::report
