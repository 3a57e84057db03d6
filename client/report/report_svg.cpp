// The run as an SVG timeline, written by hand: every string from the run is XML-escaped.
//
// Layout, top to bottom: title and figures; numbered verdict markers; the plot (phase bands,
// round ends, RSS, reference lines, the run's end and the release window after it); the time
// axis; a legend; the verdicts as sentences, numbered like their markers, so a PNG of the chart
// tells the story without the SVG's tooltips. The y axis fits the run's own memory: a budget or
// estimate far above it is named at the plot's top edge instead of flattening the curve.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "ramguard/base/verdict_rank.hpp"
#include "report/format.hpp"
#include "report/render.hpp"
#include "report/run_facts.hpp"
#include "report/svg_labels.hpp"
#include "report/svg_scale.hpp"

namespace ramguard::report {
namespace {

constexpr double kWidth = 1000;
constexpr double kLeft = 90, kRight = 970, kTop = 92, kBottom = 430;
constexpr double kTableLineChars = 150;  // verdict sentences wrap here (font-size 11)
constexpr int kMaxVerdictRows = 14;
// A reference line (budget, estimate, release limit) further than this above the run's own
// memory is named at the edge instead of being drawn to scale.
constexpr double kReferenceReach = 1.3;

std::string num(double v) {
  return format_fixed(v, 1);
}

std::string phase_color(const std::string& phase) {
  if (phase == "load") return "#9fc5e8";
  if (phase == "aggregation") return "#f9cb9c";
  if (phase == "synchronization") return "#b6d7a8";
  if (phase == "save") return "#d5a6bd";
  static const char* kPalette[] = {"#ffe599", "#a2c4c9", "#b4a7d6", "#ea9999", "#cccccc"};
  return kPalette[std::hash<std::string>{}(phase) % 5];
}

const char* anchor_name(Anchor a) {
  return a == Anchor::kStart ? "start" : a == Anchor::kMiddle ? "middle" : "end";
}

std::string verdict_color(const v1::Verdict& v) {
  if (v.cleared()) return "#999999";
  if (v.passed()) return "#38761d";
  switch (v.severity()) {
    case v1::CRITICAL:
      return "#cc0000";
    case v1::WARNING:
      return "#e69138";
    default:
      return "#3d85c6";
  }
}

struct Reference {
  std::string name;  // "budget", "estimate", "release limit"
  double bytes;
  std::string color;
};

struct Chart {
  Chart(const v1::ReportReply& r, const RenderOptions& o) : reply(r), run(r.run()), options(o) {}
  const v1::ReportReply& reply;
  const v1::RunStatus& run;
  const RenderOptions& options;
  std::int64_t t0_ms = 0;
  TimeAxis x;
  LinearScale y;
  double y_max = 1;
  double unit = 1e9;
  std::string unit_name = "GB";
  LabelPlacer labels;
  std::string out;

  double x_at_ms(std::int64_t ms) const { return x(static_cast<double>(ms - t0_ms) / 1e3); }
  std::string bytes(double b) const { return format_bytes(b, options.binary_units); }

  // A text element, placed only when it overlaps no earlier label; returns whether it was.
  bool text(double px, double py, const std::string& s, double font_size, Anchor anchor,
            const std::string& attributes = {}) {
    if (!labels.place(text_box(px, py, s, font_size, anchor))) return false;
    out += "<text x=\"" + num(px) + "\" y=\"" + num(py) + "\" font-size=\"" + num(font_size) +
           "\" text-anchor=\"" + anchor_name(anchor) + "\"" + attributes + ">" + escape_xml(s) +
           "</text>";
    return true;
  }
  // The first of the candidate baselines where the label fits.
  bool text_at_first(double px, const std::vector<double>& ys, const std::string& s,
                     double font_size, Anchor anchor, const std::string& attributes = {}) {
    for (double py : ys) {
      if (text(px, py, s, font_size, anchor, attributes)) return true;
    }
    return false;
  }
};

// The latest time anything in the run happened, in ms since the epoch.
std::int64_t end_ms(const v1::ReportReply& reply, std::int64_t t0) {
  const v1::RunStatus& run = reply.run();
  std::int64_t end = std::max(run.ended_unix_ms(), run.last().at_unix_ms());
  for (const auto& s : reply.samples()) end = std::max(end, s.at_unix_ms());
  for (const auto& b : run.boundaries()) end = std::max(end, b.reading().at_unix_ms());
  for (const auto& v : run.verdicts()) end = std::max(end, v.at_unix_ms());
  for (const auto& p : run.phases()) {
    end = std::max(
        end, t0 + static_cast<std::int64_t>((p.begin_seconds() + p.duration_seconds()) * 1e3));
  }
  return end > t0 ? end : t0 + 1000;
}

// The largest memory the run itself showed.
double run_max_bytes(const v1::ReportReply& reply) {
  const v1::RunStatus& run = reply.run();
  double m = static_cast<double>(
      std::max({run.peak_bytes(), run.baseline().rss_bytes(), run.last().rss_bytes()}));
  for (const auto& s : reply.samples()) {
    m = std::max(m, static_cast<double>(std::max(s.rss_bytes(), s.max_rss_bytes())));
  }
  for (const auto& p : run.phases()) m = std::max(m, static_cast<double>(p.peak_bytes()));
  for (const auto& b : run.boundaries()) {
    m = std::max(
        {m, static_cast<double>(b.reading().rss_bytes()), static_cast<double>(b.floor_bytes())});
  }
  return m;
}

std::vector<Reference> references(const v1::RunStatus& run, const RenderOptions& o) {
  std::vector<Reference> refs;
  if (o.budget_bytes > 0) {
    refs.push_back({"budget", static_cast<double>(o.budget_bytes), "#cc0000"});
  }
  if (run.estimate_bytes() > 0) {
    refs.push_back({"estimate", static_cast<double>(run.estimate_bytes()), "#e69138"});
  }
  if (const v1::Verdict* release = find_verdict(run, "release")) {
    const auto limit = release->figures().find("limit_bytes");
    if (limit != release->figures().end() && limit->second > 0) {
      refs.push_back({"release limit", limit->second, "#38761d"});
    }
  }
  return refs;
}

void scale_y(Chart& c, const std::vector<Reference>& refs) {
  const double run_max = run_max_bytes(c.reply);
  double top = run_max > 0 ? run_max * 1.08 : 0;
  for (const Reference& r : refs) {
    if (run_max <= 0 || r.bytes <= run_max * kReferenceReach) top = std::max(top, r.bytes * 1.04);
  }
  if (!(top > 0)) top = 1e9;
  const bool big = top >= (c.options.binary_units ? 1024.0 * 1024 * 1024 : 1e9);
  c.unit =
      c.options.binary_units ? (big ? 1024.0 * 1024 * 1024 : 1024.0 * 1024) : (big ? 1e9 : 1e6);
  c.unit_name = c.options.binary_units ? (big ? "GiB" : "MiB") : (big ? "GB" : "MB");
  const double step = nice_step(top / c.unit, 5) * c.unit;
  c.y_max = std::ceil(top / step - 1e-9) * step;
  c.y = {0, c.y_max, kBottom, kTop};
}

void y_axis(Chart& c) {
  const double step = nice_step(c.y_max / c.unit, 5);
  for (double v : ticks(0, c.y_max / c.unit, step)) {
    const double py = c.y(v * c.unit);
    c.out += "<g class=\"ytick\" data-value=\"" + format_fixed(v, 6) + "\"><line x1=\"" +
             num(kLeft) + "\" y1=\"" + num(py) + "\" x2=\"" + num(kRight) + "\" y2=\"" + num(py) +
             "\" stroke=\"#e0e0e0\"/>";
    c.text(kLeft - 6, py + 4, tick_text(v, step) + " " + c.unit_name, 11, Anchor::kEnd);
    c.out += "</g>\n";
  }
  c.out += "<g class=\"axis-title\"><text transform=\"translate(22 " + num((kTop + kBottom) / 2) +
           ") rotate(-90)\" text-anchor=\"middle\">RSS (" + c.unit_name + ")</text></g>\n";
}

void x_tick(Chart& c, double px, double value, const std::string& label) {
  // The label decides: a tick whose label would collide is left out whole.
  if (!c.labels.fits(text_box(px, kBottom + 18, label, 11, Anchor::kMiddle))) return;
  c.out += "<g class=\"xtick\" data-seconds=\"" + format_fixed(value, 6) + "\"><line x1=\"" +
           num(px) + "\" y1=\"" + num(kBottom) + "\" x2=\"" + num(px) + "\" y2=\"" +
           num(kBottom + 5) + "\" stroke=\"#333\"/>";
  c.text(px, kBottom + 18, label, 11, Anchor::kMiddle);
  c.out += "</g>\n";
}

void x_axis(Chart& c) {
  const double run_s = c.x.compressed ? c.x.run_end_s : c.x.total_s;
  const bool minutes = run_s > 600;
  const double scale = minutes ? 60.0 : 1.0;
  const std::string unit = minutes ? " min" : " s";
  const int target = std::max(2, static_cast<int>((c.x(run_s) - kLeft) / 110));
  const double step = nice_step(run_s / scale, target);
  for (double v : ticks(0, run_s / scale, step)) {
    x_tick(c, c.x(v * scale), v * scale, tick_text(v, step) + unit);
  }
  if (c.x.compressed) {
    // The release window: its own ticks, counted from the run's end.
    const double release_s = c.x.total_s - c.x.run_end_s;
    const bool rel_minutes = release_s > 600;
    const double rel_scale = rel_minutes ? 60.0 : 1.0;
    const double rel_step = nice_step(release_s / rel_scale, 2);
    for (double v : ticks(rel_step, release_s / rel_scale, rel_step)) {
      x_tick(c, c.x(c.x.run_end_s + v * rel_scale), c.x.run_end_s + v * rel_scale,
             "+" + tick_text(v, rel_step) + (rel_minutes ? " min" : " s"));
    }
  }
  c.out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kRight - kLeft) +
           "\" height=\"" + num(kBottom - kTop) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  std::string title = std::string("time since run start (") + (minutes ? "min" : "s") + ")";
  if (c.x.compressed) title += "; after the run's end, time is compressed";
  c.text((kLeft + kRight) / 2, kBottom + 36, title, 12, Anchor::kMiddle);
  c.out += "\n";
}

void phase_bands(Chart& c) {
  for (const v1::PhaseStat& p : c.run.phases()) {
    const double x1 = c.x(p.begin_seconds());
    const double w = std::max(1.0, c.x(p.begin_seconds() + p.duration_seconds()) - x1);
    const std::string title = p.phase() + ", round " + std::to_string(p.round()) + ": " +
                              format_seconds(p.duration_seconds()) + ", peak " +
                              c.bytes(static_cast<double>(p.peak_bytes())) +
                              (p.peak_exact() ? " (exact)" : " (sampled)");
    c.out += "<g class=\"phase\"><title>" + escape_xml(title) + "</title>";
    c.out += "<rect x=\"" + num(x1) + "\" y=\"" + num(kTop) + "\" width=\"" + num(w) +
             "\" height=\"" + num(kBottom - kTop) + "\" fill=\"" + phase_color(p.phase()) +
             "\" fill-opacity=\"0.45\"/>";
    if (p.peak_bytes() > 0) {
      const double py = c.y(static_cast<double>(p.peak_bytes()));
      c.out += "<line x1=\"" + num(x1) + "\" y1=\"" + num(py) + "\" x2=\"" + num(x1 + w) +
               "\" y2=\"" + num(py) + "\" stroke=\"#555\" stroke-width=\"2\"/>";
    }
    c.out += "</g>\n";
  }
}

void release_window(Chart& c) {
  if (c.run.ended_unix_ms() <= 0) return;
  const double px = c.x_at_ms(c.run.ended_unix_ms());
  if (kRight - px < 2) return;
  c.out += "<g class=\"release-window\"><rect x=\"" + num(px) + "\" y=\"" + num(kTop) +
           "\" width=\"" + num(kRight - px) + "\" height=\"" + num(kBottom - kTop) +
           "\" fill=\"#f3f3f3\"/>";
  if (c.x.compressed) {
    // A break on the axis: the scale changes here.
    c.out += "<path d=\"M" + num(px - 4) + "," + num(kBottom + 4) + " l4,-8 M" + num(px) + "," +
             num(kBottom + 4) + " l4,-8\" stroke=\"#333\"/>";
  }
  c.out += "</g>\n";
}

void rss_series(Chart& c) {
  std::vector<std::pair<double, double>> points;
  if (!c.reply.samples().empty()) {
    for (const v1::SamplePoint& s : c.reply.samples()) {
      const double px = c.x_at_ms(s.at_unix_ms());
      if (s.max_rss_bytes() > s.min_rss_bytes()) {
        c.out += "<line class=\"range\" x1=\"" + num(px) + "\" y1=\"" +
                 num(c.y(static_cast<double>(s.min_rss_bytes()))) + "\" x2=\"" + num(px) +
                 "\" y2=\"" + num(c.y(static_cast<double>(s.max_rss_bytes()))) +
                 "\" stroke=\"#6fa8dc\" stroke-width=\"2\"/>\n";
      }
      points.emplace_back(px, c.y(static_cast<double>(s.rss_bytes())));
    }
  } else {
    // Without samples, connect the exact readings: baseline, round boundaries, last.
    const v1::RunStatus& run = c.run;
    if (run.has_baseline()) {
      points.emplace_back(
          c.x_at_ms(run.baseline().at_unix_ms() ? run.baseline().at_unix_ms() : c.t0_ms),
          c.y(static_cast<double>(run.baseline().rss_bytes())));
    }
    for (const auto& b : run.boundaries()) {
      points.emplace_back(c.x_at_ms(b.reading().at_unix_ms()),
                          c.y(static_cast<double>(b.reading().rss_bytes())));
    }
    if (run.has_last()) {
      points.emplace_back(c.x_at_ms(run.last().at_unix_ms()),
                          c.y(static_cast<double>(run.last().rss_bytes())));
    }
  }
  if (points.empty()) return;
  c.out += "<polyline class=\"rss\" fill=\"none\" stroke=\"#1155cc\" stroke-width=\"2\" points=\"";
  for (const auto& [px, py] : points) c.out += num(px) + "," + num(py) + " ";
  c.out += "\"><title>RSS</title></polyline>\n";
}

void round_boundaries(Chart& c) {
  for (const v1::BoundaryReading& b : c.run.boundaries()) {
    const double px = c.x_at_ms(b.reading().at_unix_ms());
    std::string title = "end of round " + std::to_string(b.round()) + ": RSS " +
                        c.bytes(static_cast<double>(b.reading().rss_bytes())) + ", floor " +
                        c.bytes(static_cast<double>(b.floor_bytes()));
    if (b.has_allocator()) {
      title += "; the application holds " +
               c.bytes(static_cast<double>(b.allocator().allocated_bytes())) + ", " +
               (b.allocator().allocator().empty() ? std::string("the allocator")
                                                  : b.allocator().allocator()) +
               " keeps " + c.bytes(static_cast<double>(b.allocator().retained_bytes())) + " free";
    }
    c.out += "<g class=\"round\"><title>" + escape_xml(title) + "</title>";
    c.out += "<line x1=\"" + num(px) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(px) + "\" y2=\"" +
             num(kBottom) + "\" stroke=\"#666\" stroke-dasharray=\"3 3\"/>";
    const double fy = c.y(static_cast<double>(b.floor_bytes()));
    c.out += "<rect x=\"" + num(px - 4) + "\" y=\"" + num(fy - 4) +
             "\" width=\"8\" height=\"8\" fill=\"#444\" transform=\"rotate(45 " + num(px) + " " +
             num(fy) + ")\"/>";
    // Many rounds: the labels that would collide are left out (the lines stay).
    c.text(px + 2, kBottom - 6, "R" + std::to_string(b.round()), 10, Anchor::kStart);
    c.out += "</g>\n";
  }
}

// The rounds the client took a census at: a tick up from the time axis, its title the
// largest holder and the unexplained bytes (the text report's "What holds the memory" has it
// all).
void census_ticks(Chart& c) {
  for (const v1::RoundCensus& rc : c.run.censuses()) {
    if (rc.at_unix_ms() <= 0) continue;
    const double px = c.x_at_ms(rc.at_unix_ms());
    std::string title = "census at " + (rc.at_end() ? std::string("the run's end")
                                                    : "round " + std::to_string(rc.round()));
    if (!rc.census().groups().empty()) {
      const v1::CensusGroup& top = rc.census().groups(0);
      title += ": largest holder " + top.holder() + (top.reachable() ? "" : " (reference cycle)") +
               ", " + c.bytes(static_cast<double>(top.bytes()));
    }
    const std::int64_t gap = rc.unexplained_bytes();
    title += "; unexplained " + std::string(gap < 0 ? "-" : "") +
             c.bytes(static_cast<double>(gap < 0 ? -gap : gap));
    c.out += "<g class=\"census\"><title>" + escape_xml(title) + "</title>";
    c.out += "<line x1=\"" + num(px) + "\" y1=\"" + num(kBottom) + "\" x2=\"" + num(px) +
             "\" y2=\"" + num(kBottom - 12) + "\" stroke=\"#8e44ad\" stroke-width=\"3\"/>";
    // Above the round's "R" label; left out where it would collide with another label.
    c.text(px + 2, kBottom - 18, "census", 9, Anchor::kStart, " fill=\"#8e44ad\"");
    c.out += "</g>\n";
  }
}

// Where the run ended and how (ended, exited, lost): memory after this line is the release.
void run_end_marker(Chart& c) {
  if (c.run.ended_unix_ms() <= 0) return;
  const double px = c.x_at_ms(c.run.ended_unix_ms());
  const std::string label = c.run.state() == "ended" ? "run end" : "run " + c.run.state();
  c.out += "<g class=\"run-end\"><title>" + escape_xml(label) + "</title>";
  c.out += "<line x1=\"" + num(px) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(px) + "\" y2=\"" +
           num(kBottom) + "\" stroke=\"#000\" stroke-width=\"2\"/>";
  c.text_at_first(px - 3, {kTop + 12, kTop + 24, kTop + 36}, label, 10, Anchor::kEnd);
  c.out += "</g>\n";
}

// Lines within reach are drawn to scale; the others are named at the top edge with their value.
void reference_lines(Chart& c, const std::vector<Reference>& refs) {
  double edge_y = kTop + 12;
  for (const Reference& r : refs) {
    const std::string label = r.name + " " + c.bytes(r.bytes);
    if (r.bytes <= c.y_max) {
      const double py = c.y(r.bytes);
      c.out += "<g class=\"reference\" data-name=\"" + escape_xml(r.name) + "\"><line x1=\"" +
               num(kLeft) + "\" y1=\"" + num(py) + "\" x2=\"" + num(kRight) + "\" y2=\"" + num(py) +
               "\" stroke=\"" + r.color + "\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>";
      const std::string fill = " fill=\"" + r.color + "\"";
      if (!c.text_at_first(kRight - 4, {py - 4, py + 13}, label, 11, Anchor::kEnd, fill)) {
        c.text_at_first(kRight - 220, {py - 4, py + 13}, label, 11, Anchor::kEnd, fill);
      }
      c.out += "</g>\n";
    } else {
      c.out += "<g class=\"reference off-scale\" data-name=\"" + escape_xml(r.name) + "\">";
      const std::string text = "\u2191 " + label + " (above the chart)";
      // At the top left, where the run's end and the release window are not.
      for (int tries = 0; tries < 4; ++tries, edge_y += 14) {
        if (c.text(kLeft + 6, edge_y, text, 11, Anchor::kStart, " fill=\"" + r.color + "\"")) {
          break;
        }
      }
      edge_y += 14;
      c.out += "</g>\n";
    }
  }
}

// One row of the verdict table: a verdict, or the verdicts of one kind and result when there
// are many (a growth warning in each of 40 rounds), so the release still fits in the picture.
struct VerdictRow {
  std::vector<int> members;  // indexes into run.verdicts(), in order
};

std::vector<VerdictRow> verdict_rows(const v1::RunStatus& run) {
  constexpr std::size_t kGroupFrom = 3;
  std::vector<std::string> keys;
  for (const v1::Verdict& v : run.verdicts()) keys.push_back(verdict_heading(v));
  std::vector<VerdictRow> rows;
  std::vector<bool> done(keys.size(), false);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (done[i]) continue;
    VerdictRow row;
    for (std::size_t j = i; j < keys.size(); ++j) {
      if (!done[j] && keys[j] == keys[i]) row.members.push_back(static_cast<int>(j));
    }
    if (row.members.size() < kGroupFrom) row.members = {static_cast<int>(i)};
    for (int m : row.members) done[static_cast<std::size_t>(m)] = true;
    rows.push_back(std::move(row));
  }
  return rows;
}

// Numbered markers above the plot at the verdict's time; the numbers lead to the table below.
void verdict_markers(Chart& c, std::int64_t t_end, const std::vector<VerdictRow>& rows, int shown) {
  for (int i = 0; i < shown; ++i) {
    const v1::Verdict& v = c.run.verdicts(rows[static_cast<std::size_t>(i)].members.front());
    const double px =
        std::clamp(c.x_at_ms(v.at_unix_ms() > 0 ? v.at_unix_ms() : t_end), kLeft, kRight);
    const std::string n = std::to_string(i + 1);
    c.out += "<g class=\"verdict\"><title>" + escape_xml(verdict_heading(v) + ": " + v.summary()) +
             "</title>";
    for (double py : {kTop - 8, kTop - 22, kTop - 36}) {
      const TextBox box = text_box(px + 6, py + 3, n, 10, Anchor::kStart);
      const TextBox with_marker{px - 6, box.y0, box.x1, box.y1};
      if (!c.labels.place(with_marker)) continue;
      c.out += "<path d=\"M" + num(px) + "," + num(py + 5) + " l-5,-9 h10 z\" fill=\"" +
               verdict_color(v) + "\"/>";
      c.out += "<text x=\"" + num(px + 6) + "\" y=\"" + num(py + 3) +
               "\" font-size=\"10\" text-anchor=\"start\" fill=\"" + verdict_color(v) + "\">" + n +
               "</text>";
      break;
    }
    c.out += "</g>\n";
  }
}

// Returns the y below the legend.
double legend(Chart& c) {
  double lx = kLeft;
  double ly = kBottom + 58;
  // The swatch is drawn after the wrap decision, at the item's final place.
  auto item = [&](const std::function<std::string()>& swatch, const std::string& label) {
    const double width = 30 + 6.6 * static_cast<double>(display_width(label));
    if (lx + width > kRight && lx > kLeft) {
      lx = kLeft;
      ly += 18;
    }
    c.out += "<g class=\"legend\">";
    c.out += swatch();
    c.text(lx + 22, ly + 4, label, 11, Anchor::kStart);
    c.out += "</g>";
    lx += width;
  };
  auto line = [&](std::string color, std::string dash) {
    return [&, color, dash] {
      return "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 18) +
             "\" y2=\"" + num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"" +
             (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>";
    };
  };
  auto box = [&](std::string color) {
    return [&, color] {
      return "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 6) +
             "\" width=\"18\" height=\"12\" fill=\"" + color + "\" fill-opacity=\"0.45\"/>";
    };
  };
  item(line("#1155cc", ""), "RSS");
  for (const auto& s : c.reply.samples()) {
    if (s.max_rss_bytes() > s.min_rss_bytes()) {
      item(line("#6fa8dc", "2 1"), "min/max of downsampled samples");
      break;
    }
  }
  // The phases by name, in the order they first appear: the bands carry no text of their own.
  std::vector<std::string> phases;
  for (const v1::PhaseStat& p : c.run.phases()) {
    if (std::find(phases.begin(), phases.end(), p.phase()) == phases.end()) {
      phases.push_back(p.phase());
    }
  }
  for (const std::string& p : phases) item(box(phase_color(p)), p);
  if (!phases.empty()) item(line("#555", ""), "exact phase peak");
  if (!c.run.boundaries().empty()) item(line("#666", "3 3"), "round end (R1...), floor \u25c6");
  if (!c.run.censuses().empty()) item(line("#8e44ad", ""), "census (who holds the memory)");
  if (c.run.ended_unix_ms() > 0) {
    item(line("#000", ""), "run end");
    item(box("#cccccc"), "release window");
  }
  for (const Reference& r : references(c.run, c.options)) item(line(r.color, "8 4"), r.name);
  c.out += "\n";
  return ly + 24;
}

// Splits a sentence into lines of at most `width` characters, at spaces.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// The verdicts as sentences; returns the y below the table.
double verdict_table(Chart& c, double top, const std::vector<VerdictRow>& rows, int shown) {
  if (c.run.verdicts().empty()) {
    c.text(kLeft - 60, top + 4, "Verdicts: none", 12, Anchor::kStart, " font-weight=\"bold\"");
    return top + 20;
  }
  c.text(kLeft - 60, top + 4, "Verdicts", 12, Anchor::kStart, " font-weight=\"bold\"");
  double ly = top + 22;
  for (int i = 0; i < shown; ++i) {
    const std::vector<int>& members = rows[static_cast<std::size_t>(i)].members;
    const v1::Verdict& v = c.run.verdicts(members.back());
    std::string sentence = verdict_heading(v);
    if (members.size() > 1) {
      const v1::Verdict& first = c.run.verdicts(members.front());
      sentence += " " + std::to_string(members.size()) + " times";
      if (first.round() > 0 && v.round() > 0) {
        sentence +=
            ", rounds " + std::to_string(first.round()) + " to " + std::to_string(v.round());
      }
      sentence += "; the last";
    } else if (v.round() > 0) {
      sentence += ", round " + std::to_string(v.round());
    }
    if (!v.phase().empty()) sentence += ", " + v.phase();
    sentence += ": " + sanitize_utf8(v.summary());
    c.out += "<g class=\"verdict-row\">";
    c.text(kLeft - 60, ly, std::to_string(i + 1), 11, Anchor::kStart,
           " font-weight=\"bold\" fill=\"" + verdict_color(v) + "\"");
    for (const std::string& line : wrap(sentence, static_cast<std::size_t>(kTableLineChars))) {
      c.text(kLeft - 40, ly, line, 11, Anchor::kStart);
      ly += 14;
    }
    c.out += "</g>\n";
    ly += 3;
  }
  if (static_cast<std::size_t>(shown) < rows.size()) {
    c.text(kLeft - 40, ly,
           std::to_string(rows.size() - static_cast<std::size_t>(shown)) +
               " more verdicts: ramguard report " + c.run.run_id(),
           11, Anchor::kStart);
    ly += 14;
  }
  return ly;
}

}  // namespace

std::string report_svg(const v1::ReportReply& reply, const RenderOptions& options) {
  const v1::RunStatus& run = reply.run();
  Chart c(reply, options);
  c.t0_ms = run.started_unix_ms();
  if (c.t0_ms <= 0) c.t0_ms = run.baseline().at_unix_ms();
  if (c.t0_ms <= 0 && !reply.samples().empty()) c.t0_ms = reply.samples(0).at_unix_ms();
  const std::int64_t t_end = end_ms(reply, c.t0_ms);
  const double span_s = static_cast<double>(t_end - c.t0_ms) / 1e3;
  const double run_end_s =
      run.ended_unix_ms() > 0 ? static_cast<double>(run.ended_unix_ms() - c.t0_ms) / 1e3 : span_s;
  c.x = TimeAxis::make(run_end_s, span_s, kLeft, kRight);
  const std::vector<Reference> refs = references(run, options);
  scale_y(c, refs);
  const std::vector<VerdictRow> rows = verdict_rows(run);
  const int shown = std::min(static_cast<int>(rows.size()), kMaxVerdictRows);

  std::string& out = c.out;
  // The labels go to the second line, so a long set of them cannot push the title off the
  // picture; a line too long for the width is cut with an ellipsis.
  auto fit = [](std::string line, std::size_t chars) {
    if (display_width(line) <= chars) return line;
    std::string cut;
    for (char ch : line) {
      if (display_width(cut) + 1 >= chars && (static_cast<unsigned char>(ch) & 0xC0) != 0x80) break;
      cut += ch;
    }
    return cut + "\u2026";
  };
  const std::string title =
      "ramguard run " + run.run_id() + ": " + run.job() + " (" + run.state() + ")";
  out += "<title>" + escape_xml(title) +
         (run.labels().empty() ? "" : escape_xml(" [" + labels_string(run.labels()) + "]")) +
         "</title>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  c.text(kLeft - 60, 22, fit(title, 100), 15, Anchor::kStart, " font-weight=\"bold\"");
  std::string subtitle = run.labels().empty() ? "" : labels_string(run.labels()) + "; ";
  subtitle += "peak " + c.bytes(static_cast<double>(run.peak_bytes())) +
              (run.peak_exact() ? " (exact, high-water mark)" : " (sampled)") + ", baseline " +
              c.bytes(static_cast<double>(run.baseline().rss_bytes()));
  if (run.estimate_bytes() > 0) {
    subtitle += ", estimate " + c.bytes(static_cast<double>(run.estimate_bytes()));
  }
  subtitle = fit(subtitle, 125);
  c.text(kLeft - 60, 42, subtitle, 12, Anchor::kStart);
  out += "\n";

  release_window(c);
  phase_bands(c);
  y_axis(c);
  round_boundaries(c);
  census_ticks(c);
  rss_series(c);
  run_end_marker(c);
  reference_lines(c, refs);
  verdict_markers(c, t_end, rows, shown);
  x_axis(c);
  const double legend_bottom = legend(c);
  const double height = verdict_table(c, legend_bottom + 6, rows, shown) + 10;

  std::string head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  head += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" +
          num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
          "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  return head + out + "</svg>\n";
}

}  // namespace ramguard::report
