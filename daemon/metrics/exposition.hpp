#pragma once
// Pieces of Prometheus's text exposition format (version 0.0.4), as pure functions writing into
// a string: label sets rendered once when a series is created, values written at each scrape.

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

namespace ramguard::exposition {

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// `a="1",b="x\"y"`: labels in name order (std::map), values escaped (\\, \", \n).
std::string render_labels(const std::map<std::string, std::string>& labels);

// "# HELP name help\n# TYPE name gauge|counter\n"
void append_header(std::string& out, std::string_view name, std::string_view help,
                   std::string_view type);

// `name{labels} value\n` (or `name value\n` without labels). Whole numbers below 2^53 in plain
// digits, other values in the shortest form that reads back exactly; NaN and infinities as
// Prometheus spells them.
void append_sample(std::string& out, std::string_view name, std::string_view labels, double value);
// The same line with its label set given as pieces already rendered (a target's own labels, a
// series' extra label, separators), joined in order; no braces when all are empty.
void append_line(std::string& out, std::string_view name,
                 std::initializer_list<std::string_view> label_parts, double value);

}  // namespace ramguard::exposition
