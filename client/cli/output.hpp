#pragma once
// Human and JSON output shared by the subcommands. Deterministic: no times, no request ids.

#include <google/protobuf/message.h>

#include <cstdint>
#include <string>

#include "ramguard.pb.h"
#include "report/format.hpp"

namespace ramguard::cli {

// One line of protobuf JSON (lowerCamelCase, every field printed, 64-bit integers as strings).
std::string to_json(const google::protobuf::Message& message);

// "14.10 GB" or "13.13 GiB".
std::string bytes_text(double bytes, bool binary);

// The admission decision with every term of baseline + reserved + estimate <= budget - margin.
std::string admit_text(const v1::AdmitReply& reply, bool binary);

// A mark's, or a run end's, result in one line, then one line per verdict.
std::string mark_text(const v1::MarkRequest::Kind kind, const std::string& phase,
                      const v1::MarkReply& reply, bool binary);
std::string run_end_text(const std::string& run_id, const v1::RunEndReply& reply, bool binary);
std::string verdict_line(const v1::Verdict& verdict);

// One vocabulary for a verdict's outcome, the report's (client/report/format.hpp): severity
// info|warning|critical, result pass|fail|allocator|cleared, "[warning] release fail".
using report::severity_name;
using report::verdict_heading;
using report::verdict_result;

}  // namespace ramguard::cli
