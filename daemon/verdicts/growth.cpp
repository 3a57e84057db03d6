#include "verdicts/growth.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <vector>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"
#include "verdicts/fit.hpp"

namespace ramguard {

FloorPoint floor_point(const BoundaryRecord& boundary) {
  const MemoryReading& r = boundary.reading;
  FloorPoint p;
  p.round = boundary.round;
  p.at = r.at;
  p.rss_bytes = boundary.rss_floor_bytes();
  p.file_bytes = std::min(r.file_bytes, p.rss_bytes);
  p.growth_bytes = boundary.counted_floor_bytes();
  p.window_complete = boundary.window_complete;
  if (boundary.gc && boundary.gc->rss_before_bytes > boundary.gc->rss_after_bytes) {
    p.probe_drop_bytes = boundary.gc->rss_before_bytes - boundary.gc->rss_after_bytes;
  }
  if (boundary.allocator) {
    p.allocator_free_bytes = std::min(boundary.allocator->retained_bytes, p.growth_bytes);
    p.growth_bytes -= p.allocator_free_bytes;
  }
  return p;
}

std::vector<FloorPoint> settled_floors(const RunLedger& ledger) {
  std::vector<FloorPoint> out;
  for (const auto& b : ledger.boundaries) {
    if (b.settled) out.push_back(floor_point(b));
  }
  return out;
}

GrowthContext growth_context(const RunInfo& info) {
  return {info.model_bytes, info.declared_rounds};
}

const char* growth_state_name(GrowthState state) {
  switch (state) {
    case GrowthState::kNone:
      return "none";
    case GrowthState::kWarning:
      return "warning";
    case GrowthState::kLeak:
      return "leak";
    case GrowthState::kPlateau:
      return "plateau";
  }
  return "none";
}

namespace {

using Field = std::uint64_t FloorPoint::*;

// The newest floors, addressed by their index in the whole series.
struct FloorWindow {
  const std::deque<FloorPoint>& floors;
  std::size_t base;  // series index of floors.front()
  const FloorPoint& operator[](std::size_t k) const { return floors[k - base]; }
};

LineFit fit_window(const FloorWindow& f, std::size_t lo, std::size_t hi, Field field) {
  std::vector<double> x, y;
  x.reserve(hi - lo + 1);
  y.reserve(hi - lo + 1);
  for (std::size_t k = lo; k <= hi; ++k) {
    x.push_back(f[k].round);
    y.push_back(static_cast<double>(f[k].*field));
  }
  return fit_line(x, y);
}

// The counted floor: what the allocator keeps free counts against the budget (the kernel
// cannot take it back), though it is not judged as the application's growth.
std::uint64_t counted_of(const FloorPoint& p) {
  return p.growth_bytes + p.allocator_free_bytes;
}

double projected_round(const FloorPoint& last, double slope, std::uint64_t budget) {
  const std::uint64_t now = counted_of(last);
  if (now >= budget) return last.round;
  if (slope <= 0) return 0;
  return last.round + std::ceil((static_cast<double>(budget - now)) / slope -
                                1e-6);  // a millionth of a round: rounding noise
}

// How many of the newest floors the rules reach back to, the current one included.
std::size_t window_floors(const DetectorParams& p) {
  return std::max<std::size_t>({p.fit_rounds, p.projection_fit_rounds, 2 * p.plateau_rounds, 2}) +
         1;
}

// What the rules say about floor i alone, given the judged floors from `ref`.
struct Local {
  bool step = false, leak = false, budget = false;
  bool flat_tail = false, dropped = false, rose = false, decelerated = false;
  double step_bytes = 0;
  LineFit fit, rss_fit, file_fit;
  bool projection_valid = false;
  LineFit projection;
};

// max_prev: the largest judged signal over floors ref .. i-1; ref_growth: the reference's.
Local evaluate_at(const FloorWindow& f, std::size_t ref, double ref_growth, double max_prev,
                  std::size_t i, const GrowthContext& ctx, const DetectorParams& p) {
  const auto g = [&](std::size_t k) {
    return k == ref ? ref_growth : static_cast<double>(f[k].growth_bytes);
  };
  const double gmin = static_cast<double>(p.growth_min_bytes);
  const double band = static_cast<double>(p.plateau_band_bytes);
  const std::size_t judged = i - ref + 1;
  Local l;

  l.step_bytes = g(i) - g(i - 1);
  l.step = l.step_bytes >= gmin && g(i) > max_prev + band;
  l.rose = std::max(max_prev, g(i)) - ref_growth >= gmin;
  l.dropped = g(i) < g(i - 1) - band;

  // The window holds every floor the rules reach unless a reload widened them mid-run: then
  // they look back as far as the window goes until it has refilled.
  const std::size_t wlo = std::max(f.base, i + 1 - std::min<std::size_t>(p.fit_rounds, judged));
  l.fit = fit_window(f, wlo, i, &FloorPoint::growth_bytes);
  l.rss_fit = fit_window(f, wlo, i, &FloorPoint::rss_bytes);
  l.file_fit = fit_window(f, wlo, i, &FloorPoint::file_bytes);
  std::size_t growth_steps = 0;
  for (std::size_t k = wlo + 1; k <= i; ++k) growth_steps += g(k) > g(k - 1) ? 1 : 0;
  l.leak = i - wlo + 1 >= 4 && growth_steps >= 3 && l.fit.slope >= gmin &&
           l.fit.r2 >= p.min_fit_r2 && l.step_bytes >= 0.5 * l.fit.slope;

  const std::size_t plo =
      std::max(f.base, i + 1 - std::min<std::size_t>(p.projection_fit_rounds, judged));
  l.projection = fit_window(f, plo, i, &FloorPoint::growth_bytes);
  l.projection_valid =
      i - plo + 1 >= 4 && l.projection.r2 >= p.min_fit_r2 && l.projection.slope > 0;
  if (l.projection_valid && ctx.declared_rounds > 0) {
    const double at = projected_round(f[i], l.projection.slope, p.budget_bytes);
    l.budget = at > 0 && at <= ctx.declared_rounds;
  }

  if (judged >= p.plateau_rounds && i + 1 - p.plateau_rounds >= f.base) {
    const std::size_t t0 = i + 1 - p.plateau_rounds;
    double lo = g(t0), hi = g(t0);
    for (std::size_t k = t0; k <= i; ++k) lo = std::min(lo, g(k)), hi = std::max(hi, g(k));
    l.flat_tail = hi - lo <= band;
    // Growth stopped rather than crept: the tail rose at most half as much as the same
    // number of rounds before it.
    const std::size_t pre =
        std::max(f.base, t0 - std::min<std::size_t>(t0 - ref, p.plateau_rounds - 1));
    const double tail_rise = g(i) - g(t0);
    const double pre_rise = std::max(0.0, g(t0) - g(pre));
    l.decelerated = tail_rise <= 0.5 * pre_rise || tail_rise <= 0;
  }
  return l;
}

std::string window_text(std::uint32_t from, std::uint32_t to) {
  return "rounds " + std::to_string(from) + "-" + std::to_string(to);
}

// The judged signal's name: the counted floor, or with allocator facts the application's
// floor (counted less what the allocator keeps free). Every figure printed beside it is it.
std::string floor_name(const FloorPoint& last) {
  return last.allocator_free_bytes > 0
             ? "application floor (counted memory less what the allocator keeps free)"
             : "counted floor (anon + shmem + swap)";
}

// The judged growth leaves out what the allocator keeps free; the text gives the counted floor.
std::string allocator_note(const FloorPoint& last) {
  if (last.allocator_free_bytes == 0) return "";
  return " (counted floor " + format_bytes(static_cast<double>(counted_of(last))) +
         ", of which the allocator keeps " +
         format_bytes(static_cast<double>(last.allocator_free_bytes)) + " free)";
}

// What grew since the floor before the current warning began.
std::string since_clause(const GrowthAssessment& a, const GrowthContext& ctx) {
  if (a.since_base_round == 0 && a.since_base_bytes == 0) return "";
  const double total = a.total_since_bytes;
  return ", +" + format_bytes(total) + copies_note(total, ctx.model_bytes) + " since round " +
         std::to_string(a.since_base_round);
}

// previous: the floor before the last; window_first: the first floor of the fit window.
void describe(GrowthAssessment& a, const FloorPoint& last, const FloorPoint& previous,
              const FloorPoint& window_first, const FloorPoint& reference, const GrowthContext& ctx,
              const DetectorParams& p) {
  std::map<std::string, double> figures{
      {"rss_floor_bytes", static_cast<double>(a.rss_floor_bytes)},
      {"growth_floor_bytes", static_cast<double>(a.growth_floor_bytes)},
      {"file_bytes", static_cast<double>(a.file_bytes)},
      {"reference_floor_bytes", static_cast<double>(reference.rss_bytes)},
      {"reference_growth_floor_bytes", static_cast<double>(reference.growth_bytes)},
      {"previous_growth_floor_bytes", static_cast<double>(previous.growth_bytes)},
      {"reference_round", static_cast<double>(reference.round)},
      {"step_bytes", a.step_bytes},
      {"slope_bytes_per_round", a.slope_bytes_per_round},
      {"fit_r2", a.fit_r2},
      {"rss_slope_bytes_per_round", a.rss_slope_bytes_per_round},
      {"file_slope_bytes_per_round", a.file_slope_bytes_per_round},
      {"budget_bytes", static_cast<double>(p.budget_bytes)},
      {"threshold_bytes", static_cast<double>(p.growth_min_bytes)},
      {"since_round", static_cast<double>(a.since_round)},
  };
  if (a.since_base_round > 0 || a.since_base_bytes > 0) {
    figures["total_since_bytes"] = a.total_since_bytes;
    figures["since_base_round"] = a.since_base_round;
    add_copies_figure(figures, "total_since_copies", a.total_since_bytes, ctx.model_bytes);
  }
  // With allocator facts the judged floor leaves out the free memory the allocator keeps.
  if (last.allocator_free_bytes > 0) {
    figures["allocator_free_bytes"] = static_cast<double>(last.allocator_free_bytes);
  }
  add_copies_figure(figures, "copies_per_round", a.slope_bytes_per_round, ctx.model_bytes);
  add_copies_figure(figures, "step_copies", a.step_bytes, ctx.model_bytes);
  if (a.projected_round > 0) figures["projected_round"] = a.projected_round;
  if (ctx.declared_rounds > 0) figures["declared_rounds"] = ctx.declared_rounds;
  if (a.sawtooth) figures["sawtooth"] = 1;

  // Every floor printed is the judged one (growth_bytes: anon + shmem + swap less what the
  // allocator keeps free), so the printed difference is the printed step.
  const std::string now = format_bytes(static_cast<double>(last.growth_bytes));
  const std::string per_round = format_bytes(a.slope_bytes_per_round) + "/round" +
                                copies_note(a.slope_bytes_per_round, ctx.model_bytes, "/round");
  const std::string budget = format_bytes(static_cast<double>(p.budget_bytes));
  std::string projection;
  if (counted_of(last) >= p.budget_bytes && p.budget_bytes > 0) {
    projection = "; already past the " + budget + " " + p.budget_name + " (counted floor " +
                 format_bytes(static_cast<double>(counted_of(last))) + ")";
  } else if (a.projected_round > 0) {
    projection =
        "; the " + budget + " " + p.budget_name + " is reached at about round " +
        fixed(a.projected_round, 0) +
        (ctx.declared_rounds > 0 ? " of " + std::to_string(ctx.declared_rounds) + " declared" : "");
  }

  std::string summary;
  switch (a.state) {
    case GrowthState::kNone:
      return;
    case GrowthState::kLeak:
      summary = "Leak: the " + floor_name(last) + " grows " + per_round + " over " +
                window_text(window_first.round, last.round) + " (fit R^2 " + fixed(a.fit_r2, 2) +
                "), now " + now + " in round " + std::to_string(last.round) + since_clause(a, ctx) +
                projection + allocator_note(last) + ".";
      a.verdicts.push_back(make_verdict(verdict_kind::kLeak, Severity::kCritical, false, last.round,
                                        "", summary, figures, last.at));
      return;
    case GrowthState::kWarning:
      if (a.reason == "budget") {
        summary = "Slow growth: the " + floor_name(last) + " grows " + per_round + ", now " + now +
                  projection + ", before the run ends.";
      } else if (a.since_round == last.round) {
        std::string name = floor_name(last);
        name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
        summary = name + " rose from " + format_bytes(static_cast<double>(previous.growth_bytes)) +
                  " to " + now + " in round " + std::to_string(last.round) + " (+" +
                  format_bytes(a.step_bytes) + copies_clause(a.step_bytes, ctx.model_bytes) +
                  "), above the " + format_bytes(static_cast<double>(p.growth_min_bytes)) +
                  " per-round threshold" + projection + allocator_note(last) + ".";
      } else {
        summary = "Growth continues since round " + std::to_string(a.since_round) + ": the " +
                  floor_name(last) + " was " +
                  format_bytes(static_cast<double>(reference.growth_bytes)) + " at round " +
                  std::to_string(reference.round) + ", now " + now + " in round " +
                  std::to_string(last.round) + " (this round +" + format_bytes(a.step_bytes) +
                  copies_clause(a.step_bytes, ctx.model_bytes) + since_clause(a, ctx) + "), " +
                  per_round + projection + allocator_note(last) + ".";
      }
      a.verdicts.push_back(make_verdict(verdict_kind::kGrowthWarning, Severity::kWarning, false,
                                        last.round, "", summary, figures, last.at));
      return;
    case GrowthState::kPlateau:
      figures["plateau_bytes"] = static_cast<double>(last.rss_bytes);
      figures["plateau_growth_bytes"] = static_cast<double>(last.growth_bytes);
      summary = "Growth stopped: " + floor_name(last) + " plateau at " + now + " since round " +
                std::to_string(a.since_round) + ", " +
                format_bytes(static_cast<double>(last.growth_bytes) -
                             static_cast<double>(reference.growth_bytes)) +
                " above the round " + std::to_string(reference.round) + " floor; no leak.";
      a.verdicts.push_back(make_verdict(verdict_kind::kPlateau, Severity::kInfo, true, last.round,
                                        "", summary, figures, last.at));
      return;
  }
}

}  // namespace

GrowthAssessment assess_growth(std::span<const FloorPoint> floors, const GrowthContext& ctx,
                               const DetectorParams& p) {
  GrowthTracker tracker;
  for (const FloorPoint& floor : floors) tracker.add(floor, ctx, p);
  return tracker.current();
}

const GrowthAssessment& GrowthTracker::add(const FloorPoint& floor, const GrowthContext& ctx,
                                           const DetectorParams& p) {
  window_.push_back(floor);
  ++count_;
  while (window_.size() > window_floors(p)) window_.pop_front();
  const std::size_t i = count_ - 1;
  const FloorWindow f{window_, count_ - window_.size()};

  GrowthAssessment a;
  a.round = floor.round;
  a.at = floor.at;
  a.rss_floor_bytes = floor.rss_bytes;
  a.growth_floor_bytes = floor.growth_bytes;
  a.file_bytes = floor.file_bytes;
  const std::size_t ref = p.warmup_rounds > 0 ? p.warmup_rounds - 1 : 0;
  if (i == ref) {
    reference_ = floor;
    max_judged_growth_ = static_cast<double>(floor.growth_bytes);
    since_ = floor.round;
  }
  if (i <= ref) {  // nothing judged yet: warm-up only
    assessment_ = std::move(a);
    return assessment_;
  }

  const double ref_growth = static_cast<double>(reference_.growth_bytes);
  const Local l = evaluate_at(f, ref, ref_growth, max_judged_growth_, i, ctx, p);
  max_judged_growth_ = std::max(max_judged_growth_, static_cast<double>(floor.growth_bytes));
  const bool growing = state_ == GrowthState::kWarning || state_ == GrowthState::kLeak;
  // Teardown and the guard's own probe are not recovery: such a floor cannot stop growth.
  const bool may_stop = floor.window_complete && floor.probe_drop_bytes <= p.plateau_band_bytes;
  const bool stopped = (l.flat_tail || l.dropped) && may_stop;
  if (l.dropped && l.rose) sawtooth_ = true;
  GrowthState next = GrowthState::kNone;
  std::string why;
  if (l.leak) {
    next = GrowthState::kLeak, why = "fit";
  } else if (growing && !stopped) {
    next = state_, why = reason_;
  } else if (l.step) {
    next = GrowthState::kWarning, why = "step";
  } else if (l.budget) {
    next = GrowthState::kWarning, why = "budget";
  } else if (l.flat_tail && l.rose && (state_ == GrowthState::kPlateau || l.decelerated)) {
    next = GrowthState::kPlateau, why = "plateau";
  }
  if (next != state_) since_ = floor.round;
  const bool now_growing = next == GrowthState::kWarning || next == GrowthState::kLeak;
  if (now_growing && !growing) {  // the floor before the warning began: totals count from it
    since_base_round_ = f[i - 1].round;
    since_base_bytes_ = f[i - 1].growth_bytes;
  }
  state_ = next;
  reason_ = std::move(why);

  a.state = state_;
  a.reason = reason_;
  a.since_round = since_;
  a.sawtooth = sawtooth_;
  a.step_bytes = l.step_bytes;
  a.grew_past_threshold = l.step_bytes >= static_cast<double>(p.growth_min_bytes);
  if (state_ == GrowthState::kWarning || state_ == GrowthState::kLeak) {
    a.since_base_round = since_base_round_;
    a.since_base_bytes = since_base_bytes_;
    a.total_since_bytes =
        static_cast<double>(floor.growth_bytes) - static_cast<double>(since_base_bytes_);
  }
  a.slope_bytes_per_round = l.fit.slope;
  a.fit_r2 = l.fit.r2;
  a.rss_slope_bytes_per_round = l.rss_fit.slope;
  a.file_slope_bytes_per_round = l.file_fit.slope;
  a.copies_per_round = model_copies(l.fit.slope, ctx.model_bytes);
  if (l.projection_valid && (ctx.declared_rounds > 0 || state_ == GrowthState::kLeak)) {
    a.projected_round = projected_round(floor, l.projection.slope, p.budget_bytes);
  } else if (state_ == GrowthState::kLeak) {
    a.projected_round = projected_round(floor, l.fit.slope, p.budget_bytes);
  }
  const std::size_t wlo =
      std::max(f.base, i + 1 - std::min<std::size_t>(p.fit_rounds, i - ref + 1));
  describe(a, floor, f[i - 1], f[wlo], reference_, ctx, p);
  assessment_ = std::move(a);
  return assessment_;
}

std::vector<Verdict> new_growth_verdicts(const GrowthAssessment& previous,
                                         const GrowthAssessment& current) {
  std::vector<Verdict> out;
  if (previous.state == current.state) {
    // Growth that goes on is restated every round it grows past the threshold: copies per
    // round, the total since the warning began and the projection, as an update (delivered and
    // stored; the log has the first).
    const bool growing =
        current.state == GrowthState::kWarning || current.state == GrowthState::kLeak;
    if (growing && current.round != previous.round && current.grew_past_threshold) {
      for (Verdict v : current.verdicts) {
        v.update = true;
        out.push_back(std::move(v));
      }
    }
    return out;
  }
  const bool was_growing =
      previous.state == GrowthState::kWarning || previous.state == GrowthState::kLeak;
  const bool escalation =
      previous.state == GrowthState::kWarning && current.state == GrowthState::kLeak;
  if (was_growing && !escalation) {
    Verdict cleared;
    cleared.kind =
        previous.state == GrowthState::kLeak ? verdict_kind::kLeak : verdict_kind::kGrowthWarning;
    cleared.severity = Severity::kInfo;
    cleared.passed = true;
    cleared.cleared = true;
    cleared.round = current.round;
    cleared.summary =
        std::string(previous.state == GrowthState::kLeak ? "Leak" : "Growth warning") +
        " from round " + std::to_string(previous.since_round) + " cleared at round " +
        std::to_string(current.round) + ": growth stopped, floor " +
        format_bytes(static_cast<double>(current.rss_floor_bytes)) + ".";
    cleared.figures = {{"rss_floor_bytes", static_cast<double>(current.rss_floor_bytes)},
                       {"since_round", static_cast<double>(previous.since_round)}};
    cleared.at = current.at;
    out.push_back(std::move(cleared));
  }
  for (const auto& v : current.verdicts) out.push_back(v);
  return out;
}

}  // namespace ramguard
