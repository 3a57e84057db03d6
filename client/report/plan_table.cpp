#include "report/plan_table.hpp"

#include <algorithm>
#include <cmath>

#include "report/format.hpp"
#include "report/table.hpp"

namespace ramguard::report {

std::vector<PhasePlanRow> phase_plan_rows(const v1::RunStatus& run) {
  std::vector<PhasePlanRow> rows;
  bool planned = false;
  for (const v1::PhaseStat& p : run.phases()) {
    auto row = std::find_if(rows.begin(), rows.end(),
                            [&](const PhasePlanRow& r) { return r.phase == p.phase(); });
    if (row == rows.end()) {
      rows.push_back({p.phase()});
      row = rows.end() - 1;
    }
    row->plan_bytes = std::max<std::uint64_t>(row->plan_bytes, p.plan_bytes());
    row->allocated_bytes = std::max<std::uint64_t>(row->allocated_bytes, p.allocated_bytes());
    row->peak_bytes = std::max<std::uint64_t>(row->peak_bytes, p.peak_bytes());
    row->peak_exact = row->peak_exact && p.peak_exact();
    planned |= p.plan_bytes() > 0;
  }
  if (!planned) rows.clear();
  return rows;
}

const PhasePlanRow* largest_plan_gap(const std::vector<PhasePlanRow>& rows) {
  const PhasePlanRow* best = nullptr;
  for (const PhasePlanRow& r : rows) {
    if (r.plan_bytes == 0) continue;  // a phase the plan does not know has no gap to judge
    if (best == nullptr || std::fabs(r.gap_bytes()) > std::fabs(best->gap_bytes())) best = &r;
  }
  return best;
}

namespace {

std::string bytes_and_copies(std::uint64_t b, std::uint64_t model_bytes, bool binary) {
  std::string text = format_bytes(static_cast<double>(b), binary);
  if (model_bytes > 0) {
    text += " (" + format_fixed(static_cast<double>(b) / static_cast<double>(model_bytes), 2) + ")";
  }
  return text;
}

std::string signed_bytes_and_copies(double b, std::uint64_t model_bytes, bool binary) {
  std::string text = (b >= 0 ? "+" : "-") + format_bytes(std::fabs(b), binary);
  if (model_bytes > 0) {
    text += " (" + std::string(b >= 0 ? "+" : "-") +
            format_fixed(std::fabs(b) / static_cast<double>(model_bytes), 2) + ")";
  }
  return text;
}

}  // namespace

std::string plan_table_text(const v1::RunStatus& run, bool binary) {
  const std::vector<PhasePlanRow> rows = phase_plan_rows(run);
  if (rows.empty()) return "";
  const std::uint64_t model = run.model_bytes();
  Table t;
  t.add_column("phase");
  t.add_column("planned", Align::kRight);
  t.add_column("allocated at end", Align::kRight);
  t.add_column("exact peak", Align::kRight);
  t.add_column("peak - plan", Align::kRight);
  for (const PhasePlanRow& r : rows) {
    t.add_row({r.phase, r.plan_bytes > 0 ? bytes_and_copies(r.plan_bytes, model, binary) : "-",
               r.allocated_bytes > 0 ? bytes_and_copies(r.allocated_bytes, model, binary) : "-",
               bytes_and_copies(r.peak_bytes, model, binary) + (r.peak_exact ? "" : " sampled"),
               r.plan_bytes > 0 ? signed_bytes_and_copies(r.gap_bytes(), model, binary) : "-"});
  }
  std::string out =
      "\nPlan against peaks, per phase over the run (planned: the plan's overhead + "
      "the phase's states; allocated: the allocator's live bytes sent with the end "
      "mark" +
      std::string(model > 0 ? "; in parentheses: model copies" : "") + ")\n" + t.text("  ");
  if (const PhasePlanRow* gap = largest_plan_gap(rows)) {
    out += "  Largest gap: " + gap->phase + ", exact peak " +
           format_bytes(static_cast<double>(gap->peak_bytes), binary) + " is " +
           format_bytes(std::fabs(gap->gap_bytes()), binary) +
           (model > 0
                ? " (" + format_fixed(std::fabs(gap->gap_bytes()) / static_cast<double>(model), 2) +
                      " model copies)"
                : std::string()) +
           (gap->gap_bytes() > 0 ? " ABOVE" : " below") + " the plan's " +
           format_bytes(static_cast<double>(gap->plan_bytes), binary) + ".\n";
  }
  return out;
}

}  // namespace ramguard::report
