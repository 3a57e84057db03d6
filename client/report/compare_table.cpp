// Runs side by side: peak RAM, RSS between rounds, RSS after completion, plus verdicts, worst
// phase gap and estimate ratio; as text, markdown, CSV or JSON.
#include <algorithm>
#include <string>
#include <vector>

#include "ramguard/base/verdict_rank.hpp"
#include "report/format.hpp"
#include "report/json_writer.hpp"
#include "report/render.hpp"
#include "report/table.hpp"

namespace ramguard::report {
namespace {

// "growth_warning(warning), release(fail)": verdicts still standing, in order.
std::string verdicts_cell(const v1::CompareRow& row) {
  std::string out;
  for (const v1::Verdict& v : row.verdicts()) {
    if (v.cleared()) continue;
    if (v.kind() == "release" || v.kind() == "phase_gap") {
      if (v.kind() == "phase_gap" && v.passed()) continue;
    } else if (v.severity() == v1::INFO) {
      continue;  // informational verdicts (plateau, accuracy) would drown the column
    }
    if (!out.empty()) out += ", ";
    out += v.kind() + "(" +
           (v.kind() == "release" ? release_outcome(v.passed(), severity_name(v.severity()),
                                                    v.figures().contains("not_verified"))
                                  : severity_name(v.severity())) +
           ")";
  }
  if (out.empty()) out = row.worst_verdict().empty() ? "none" : row.worst_verdict();
  return out;
}

std::string json(const v1::CompareReply& reply) {
  JsonWriter w;
  w.begin_object().field("schema", "ramguard.compare/1").key("rows").begin_array();
  for (const v1::CompareRow& row : reply.rows()) {
    w.begin_object().field("run_id", row.run_id()).field("job", row.job());
    w.key("labels").begin_object();
    for (const auto& [key, value] : sorted_labels(row.labels())) w.field(key, value);
    w.end_object();
    w.field("peak_bytes", static_cast<std::uint64_t>(row.peak_bytes()))
        .field("first_floor_bytes", static_cast<std::uint64_t>(row.first_floor_bytes()))
        .field("last_floor_bytes", static_cast<std::uint64_t>(row.last_floor_bytes()))
        .field("after_completion_bytes", static_cast<std::uint64_t>(row.after_completion_bytes()))
        .field("worst_verdict", row.worst_verdict())
        .field("worst_gap_seconds", row.worst_gap_seconds())
        .field("estimate_ratio", row.estimate_ratio());
    if (!row.top_holder().empty()) {  // runs with a census: what held the most at its last one
      w.field("top_holder", row.top_holder())
          .field("top_holder_bytes", static_cast<std::uint64_t>(row.top_holder_bytes()));
    }
    w.key("verdicts");
    write_verdicts(w, row.verdicts());
    w.end_object();
  }
  w.end_array().end_object();
  return w.str();
}

}  // namespace

std::string compare_table(const v1::CompareReply& reply, TableFormat format,
                          const RenderOptions& o) {
  if (format == TableFormat::kJson) return json(reply);
  auto bytes = [&](std::uint64_t b) {
    return format_bytes(static_cast<double>(b), o.binary_units);
  };
  Table t;
  t.add_column("run");
  t.add_column("job");
  t.add_column("labels");
  t.add_column("peak RAM", Align::kRight);
  t.add_column("RSS between rounds");
  t.add_column("RSS after completion", Align::kRight);
  t.add_column("verdicts");
  t.add_column("worst phase gap", Align::kRight);
  t.add_column("peak/estimate", Align::kRight);
  // The top holder of each run's last census: a column only when some run sent a census.
  const bool holders = std::any_of(reply.rows().begin(), reply.rows().end(),
                                   [](const v1::CompareRow& r) { return !r.top_holder().empty(); });
  if (holders) t.add_column("top holder (last census)");
  for (const v1::CompareRow& row : reply.rows()) {
    const bool has_floors = row.first_floor_bytes() > 0 || row.last_floor_bytes() > 0;
    std::vector<std::string> cells(
        {row.run_id(), row.job(), labels_string(row.labels()), bytes(row.peak_bytes()),
         has_floors ? bytes(row.first_floor_bytes()) + " -> " + bytes(row.last_floor_bytes()) : "-",
         row.after_completion_bytes() > 0 ? bytes(row.after_completion_bytes()) : "-",
         verdicts_cell(row),
         row.worst_gap_seconds() > 0 ? format_seconds(row.worst_gap_seconds()) : "-",
         row.estimate_ratio() > 0 ? format_fixed(row.estimate_ratio(), 2) : "-"});
    if (holders) {
      cells.push_back(row.top_holder().empty()
                          ? "-"
                          : escape_text(row.top_holder()) + " " + bytes(row.top_holder_bytes()));
    }
    t.add_row(cells);
  }
  switch (format) {
    case TableFormat::kMarkdown:
      return t.markdown();
    case TableFormat::kCsv:
      return t.csv();
    default:
      return reply.rows().empty() ? "no runs to compare\n" : t.text();
  }
}

}  // namespace ramguard::report
