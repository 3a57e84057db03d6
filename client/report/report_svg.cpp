// The run as an SVG timeline, written by hand: every string from the run is XML-escaped.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "report/format.hpp"
#include "report/render.hpp"
#include "report/run_facts.hpp"
#include "report/svg_scale.hpp"

namespace ramguard::report {
namespace {

constexpr double kWidth = 1000, kHeight = 560;
constexpr double kLeft = 90, kRight = 970, kTop = 100, kBottom = 460;

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

std::string severity_color(v1::Severity s) {
  switch (s) {
    case v1::CRITICAL:
      return "#cc0000";
    case v1::WARNING:
      return "#e69138";
    default:
      return "#3d85c6";
  }
}

struct Chart {
  Chart(const v1::RunStatus& r, const RenderOptions& o) : run(r), options(o) {}
  const v1::RunStatus& run;
  const RenderOptions& options;
  std::int64_t t0_ms = 0;
  LinearScale x, y;
  double unit = 1e9;
  std::string out;

  double x_at_ms(std::int64_t ms) const { return x(static_cast<double>(ms - t0_ms) / 1e3); }
  double x_at_s(double s) const { return x(s); }
  std::string bytes(double b) const { return format_bytes(b, options.binary_units); }

  void hline(double value, const std::string& color, const std::string& label,
             const std::string& cls) {
    const double py = y(value);
    out += "<g class=\"" + cls + "\"><title>" + escape_xml(label) + "</title>";
    out += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(py) + "\" x2=\"" + num(kRight) +
           "\" y2=\"" + num(py) + "\" stroke=\"" + color +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>";
    out += "<text x=\"" + num(kRight - 4) + "\" y=\"" + num(py - 4) +
           "\" text-anchor=\"end\" fill=\"" + color + "\">" + escape_xml(label) + "</text></g>\n";
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

double max_bytes(const v1::ReportReply& reply, const RenderOptions& o) {
  const v1::RunStatus& run = reply.run();
  double m =
      static_cast<double>(std::max({run.peak_bytes(), run.baseline().rss_bytes(),
                                    run.last().rss_bytes(), run.estimate_bytes(), o.budget_bytes}));
  for (const auto& s : reply.samples()) {
    m = std::max(m, static_cast<double>(std::max(s.rss_bytes(), s.max_rss_bytes())));
  }
  for (const auto& p : run.phases()) m = std::max(m, static_cast<double>(p.peak_bytes()));
  for (const auto& b : run.boundaries())
    m = std::max(m, static_cast<double>(b.reading().rss_bytes()));
  return m > 0 ? m : 1e9;
}

void axes(Chart& c, double t_span_s, double y_max) {
  std::string& out = c.out;
  const std::string unit_name = c.options.binary_units ? "GiB" : "GB";
  const double step = nice_step(y_max / c.unit, 6);
  for (double v : ticks(0, y_max / c.unit, step)) {
    const double py = c.y(v * c.unit);
    out += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(py) + "\" x2=\"" + num(kRight) +
           "\" y2=\"" + num(py) + "\" stroke=\"#e0e0e0\"/>";
    out += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(py + 4) + "\" text-anchor=\"end\">" +
           format_fixed(v, step < 1 ? 1 : 0) + " " + unit_name + "</text>\n";
  }
  const bool minutes = t_span_s > 600;
  const double scale = minutes ? 60.0 : 1.0;
  const double tstep = nice_step(t_span_s / scale, 8);
  for (double v : ticks(0, t_span_s / scale, tstep)) {
    const double px = c.x(v * scale);
    out += "<line x1=\"" + num(px) + "\" y1=\"" + num(kBottom) + "\" x2=\"" + num(px) + "\" y2=\"" +
           num(kBottom + 5) + "\" stroke=\"#333\"/>";
    out += "<text x=\"" + num(px) + "\" y=\"" + num(kBottom + 18) + "\" text-anchor=\"middle\">" +
           format_fixed(v, tstep < 1 ? 1 : 0) + (minutes ? " min" : " s") + "</text>\n";
  }
  out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kRight - kLeft) +
         "\" height=\"" + num(kBottom - kTop) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  out += "<text x=\"" + num((kLeft + kRight) / 2) + "\" y=\"" + num(kBottom + 38) +
         "\" text-anchor=\"middle\">time since run start (" + (minutes ? "min" : "s") +
         ")</text>\n";
  out += "<text transform=\"translate(22 " + num((kTop + kBottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">RSS (" + unit_name + ")</text>\n";
}

void phase_bands(Chart& c) {
  for (const v1::PhaseStat& p : c.run.phases()) {
    const double x1 = c.x_at_s(p.begin_seconds());
    const double w = std::max(1.0, c.x_at_s(p.begin_seconds() + p.duration_seconds()) - x1);
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
    // Vertical labels fit narrow bands.
    c.out += "<text transform=\"translate(" + num(x1 + std::min(w / 2 + 4, 12.0)) + " " +
             num(kTop + 6) + ") rotate(90)\" font-size=\"10\" fill=\"#333\">" +
             escape_xml(p.phase()) + "</text></g>\n";
  }
}

void rss_series(Chart& c, const v1::ReportReply& reply) {
  std::vector<std::pair<double, double>> points;
  if (!reply.samples().empty()) {
    for (const v1::SamplePoint& s : reply.samples()) {
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
    c.out += "<text x=\"" + num(px + 3) + "\" y=\"" + num(kBottom - 6) + "\" font-size=\"10\">R" +
             std::to_string(b.round()) + "</text></g>\n";
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
  c.out += "<text x=\"" + num(px - 3) + "\" y=\"" + num(kTop + 12) +
           "\" font-size=\"10\" text-anchor=\"end\">" + escape_xml(label) + "</text></g>\n";
}

void verdict_markers(Chart& c, std::int64_t t_end) {
  int row = 0;
  for (const v1::Verdict& v : c.run.verdicts()) {
    const double px = c.x_at_ms(v.at_unix_ms() > 0 ? v.at_unix_ms() : t_end);
    const double py = kTop - 8 - 14 * (row++ % 3);
    // A release passes or fails; its marker says which, as the text report does.
    const bool release = v.kind() == "release";
    const std::string color = v.cleared() ? "#999999"
                              : release   ? (v.passed() ? "#38761d" : "#cc0000")
                                          : severity_color(v.severity());
    const std::string label = release ? (v.passed() ? "release: pass" : "release: FAIL") : v.kind();
    const std::string title = std::string(severity_name(v.severity())) + " " + v.kind() +
                              (v.cleared() ? " (cleared)" : "") + ": " + v.summary();
    c.out += "<g class=\"verdict\"><title>" + escape_xml(title) + "</title>";
    c.out +=
        "<path d=\"M" + num(px) + "," + num(py + 5) + " l-5,-9 h10 z\" fill=\"" + color + "\"/>";
    // Labels near the right edge go to the left of their marker so they stay on the canvas.
    const bool flip = px > kRight - 120;
    c.out += "<text x=\"" + num(flip ? px - 7 : px + 7) + "\" y=\"" + num(py + 3) +
             "\" font-size=\"10\" text-anchor=\"" + (flip ? "end" : "start") + "\" fill=\"" +
             color + "\">" + escape_xml(label) + "</text></g>\n";
  }
}

void legend(Chart& c) {
  double lx = kLeft;
  const double ly = kBottom + 62;
  auto item = [&](const std::string& swatch, const std::string& label) {
    c.out += "<g class=\"legend\">" + swatch + "<text x=\"" + num(lx + 22) + "\" y=\"" +
             num(ly + 4) + "\" font-size=\"11\">" + escape_xml(label) + "</text></g>";
    lx += 30 + 6.5 * static_cast<double>(label.size());
  };
  auto line = [&](const std::string& color, const std::string& dash) {
    return "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 18) + "\" y2=\"" +
           num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"" +
           (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>";
  };
  item(line("#1155cc", ""), "RSS");
  item(line("#6fa8dc", "2 1"), "min/max of downsampled samples");
  item(line("#555", ""), "exact phase peak");
  item(line("#666", "3 3"), "round end");
  if (c.run.ended_unix_ms() > 0) item(line("#000", ""), "run end");
  if (c.options.budget_bytes > 0) item(line("#cc0000", "8 4"), "budget");
  if (c.run.estimate_bytes() > 0) item(line("#e69138", "8 4"), "estimate");
  c.out += "\n";
}

}  // namespace

std::string report_svg(const v1::ReportReply& reply, const RenderOptions& options) {
  const v1::RunStatus& run = reply.run();
  Chart c(run, options);
  c.unit = options.binary_units ? 1024.0 * 1024 * 1024 : 1e9;
  c.t0_ms = run.started_unix_ms();
  if (c.t0_ms <= 0) c.t0_ms = run.baseline().at_unix_ms();
  if (c.t0_ms <= 0 && !reply.samples().empty()) c.t0_ms = reply.samples(0).at_unix_ms();
  const std::int64_t t_end = end_ms(reply, c.t0_ms);
  const double span_s = static_cast<double>(t_end - c.t0_ms) / 1e3;
  const double raw_max = max_bytes(reply, options) * 1.08;
  const double y_step = nice_step(raw_max / c.unit, 6) * c.unit;
  const double y_max = std::ceil(raw_max / y_step) * y_step;
  c.x = {0, span_s, kLeft, kRight};
  c.y = {0, y_max, kBottom, kTop};

  std::string& out = c.out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" +
         num(kHeight) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  const std::string title = "ramguard run " + run.run_id() + ": " + run.job() +
                            (run.labels().empty() ? "" : " [" + labels_string(run.labels()) + "]") +
                            " (" + run.state() + ")";
  out += "<title>" + escape_xml(title) + "</title>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + num(kLeft) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" +
         escape_xml(title) + "</text>\n";
  std::string subtitle = "peak " + c.bytes(static_cast<double>(run.peak_bytes())) +
                         (run.peak_exact() ? " (exact, high-water mark)" : " (sampled)") +
                         ", baseline " + c.bytes(static_cast<double>(run.baseline().rss_bytes()));
  if (run.estimate_bytes() > 0) {
    subtitle += ", estimate " + c.bytes(static_cast<double>(run.estimate_bytes()));
  }
  out += "<text x=\"" + num(kLeft) + "\" y=\"40\">" + escape_xml(subtitle) + "</text>\n";

  phase_bands(c);
  axes(c, span_s, y_max);
  round_boundaries(c);
  rss_series(c, reply);
  if (options.budget_bytes > 0) {
    c.hline(static_cast<double>(options.budget_bytes), "#cc0000",
            "budget " + c.bytes(static_cast<double>(options.budget_bytes)), "budget");
  }
  if (run.estimate_bytes() > 0) {
    c.hline(static_cast<double>(run.estimate_bytes()), "#e69138",
            "estimate " + c.bytes(static_cast<double>(run.estimate_bytes())), "estimate");
  }
  run_end_marker(c);
  verdict_markers(c, t_end);
  legend(c);
  out += "</svg>\n";
  return out;
}

}  // namespace ramguard::report
