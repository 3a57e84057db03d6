#pragma once
// Units, escaping and small helpers shared by the renderers.

#include <map>
#include <string>
#include <string_view>

#include "ramguard.pb.h"
#include "ramguard/base/json_escape.hpp"
#include "ramguard/base/units.hpp"
#include "ramguard/base/utf8.hpp"

namespace ramguard::report {

// Sizes and durations as the daemon prints them (ramguard/base/units.hpp): "14.10 GB", "70.1 MB",
// "13.13 GiB"; "6.75 s", "300 ms", "12.5 min".
using ramguard::format_bytes;
using ramguard::format_seconds;
// "2024-05-01 12:00:00 UTC"; "-" for 0.
std::string format_unix_ms(std::int64_t unix_ms);
// "%.2f" without locale surprises.
std::string format_fixed(double value, int decimals);

// Replaces bytes that are not valid UTF-8 with '?', so every renderer emits valid text.
inline std::string sanitize_utf8(std::string_view text) {
  return valid_utf8(text, "?");
}
// For terminals: control characters become visible escapes ("\n", "\x1b"), so a label cannot
// break the table or send escape sequences.
std::string escape_text(std::string_view text);
std::string escape_xml(std::string_view text);
using ramguard::escape_json;  // ramguard/base/json_escape.hpp: without the surrounding quotes
std::string escape_csv(std::string_view text);  // quoted when needed (RFC 4180)
std::string escape_markdown(std::string_view text);

// Number of code points, for column alignment.
std::size_t display_width(std::string_view text);

// "build=final,seed=1", sorted by key (protobuf maps have no order).
std::string labels_string(const google::protobuf::Map<std::string, std::string>& labels);
std::map<std::string, std::string> sorted_labels(
    const google::protobuf::Map<std::string, std::string>& labels);

// A verdict figure in its unit, chosen by the name's suffix: *_bytes as sizes, *_seconds as
// durations, everything else as a plain number.
std::string format_figure(std::string_view name, double value, bool binary);
std::map<std::string, double> sorted_figures(const v1::Verdict& verdict);

const char* severity_name(v1::Severity severity);
// The verdict that matters most, by the order the daemon uses too (ramguard/base/verdict_rank.hpp):
// standing before cleared, then severity, failed before passed, kind; the latest among equals.
// Returns nullptr when there is none.
const v1::Verdict* worst_verdict(const google::protobuf::RepeatedPtrField<v1::Verdict>& verdicts);
// "warning growth_warning" style short form, "(cleared)" appended to a cleared one; "-" when none.
std::string verdict_label(const v1::Verdict* verdict);
// A verdict's result in the one vocabulary of the CLI, reports and charts: "pass", "fail",
// "allocator" (a release that failed only on free memory the allocator keeps) or "cleared".
std::string verdict_result(const v1::Verdict& verdict);
// "[warning] release fail"
std::string verdict_heading(const v1::Verdict& verdict);

}  // namespace ramguard::report
