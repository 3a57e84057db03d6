#include "admission/estimator.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "ramguard/base/units.hpp"
#include "verdicts/release.hpp"

namespace ramguard {
namespace {

// 2^64 as a double: anything at or above it does not fit in std::uint64_t.
constexpr double kTwoPow64 = 18446744073709551616.0;

std::string copies_text(double copies) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", copies);
  return buf;
}

}  // namespace

double allocator_retained_copies(std::string_view allocator) {
  return allocator == "glibc" ? kGlibcRetainedModelCopies : 0.0;
}

Result<Estimate> estimate_from_plan(const MemoryPlan& plan, std::uint64_t model_bytes,
                                    std::uint32_t hosts, std::string_view allocator) {
  const std::string where = "plan '" + plan.name + "'";
  if (plan.phases.empty()) {
    return Error{where + " has no phases; list at least one phase with its live states"};
  }
  if (model_bytes == 0) {
    return Error{where + ": model size is 0 bytes; give model bytes or parameters"};
  }
  Estimate best;
  bool have_best = false;
  for (const PlanPhase& phase : plan.phases) {
    Estimate candidate;
    double phase_total = 0;
    for (const PlanState& state : phase.states) {
      const std::string at = where + " phase '" + phase.phase + "' state '" + state.name + "'";
      if (!std::isfinite(state.copies) || state.copies < 0) {
        return Error{at + ": copies must be a finite number >= 0, got " +
                     copies_text(state.copies)};
      }
      if (state.per_host && hosts == 0) {
        return Error{at + " is per host, but the host count is 0; give hosts >= 1"};
      }
      const double copies = state.per_host ? state.copies * hosts : state.copies;
      const double bytes = std::round(copies * static_cast<double>(model_bytes));
      if (bytes >= kTwoPow64) {
        return Error{at + ": " + copies_text(copies) + " copies of " +
                     format_bytes(static_cast<double>(model_bytes)) + " overflow 64 bits"};
      }
      phase_total += bytes;
      candidate.breakdown.push_back({state.name, copies, static_cast<std::uint64_t>(bytes)});
    }
    if (phase_total + static_cast<double>(plan.overhead_bytes) >= kTwoPow64) {
      return Error{where + " phase '" + phase.phase + "': the live sum overflows 64 bits"};
    }
    std::uint64_t live = 0;
    for (const EstimateTerm& term : candidate.breakdown) live += term.bytes;
    candidate.bytes = live + plan.overhead_bytes;
    candidate.phase = phase.phase;
    if (!have_best || candidate.bytes > best.bytes) {
      best = std::move(candidate);
      have_best = true;
    }
  }
  best.plan = plan.name;
  best.model_bytes = model_bytes;
  best.hosts = hosts;
  best.overhead_bytes = plan.overhead_bytes;
  best.allocator = std::string(allocator);
  best.allocator_copies = allocator_retained_copies(allocator);
  const double retained = std::round(best.allocator_copies * static_cast<double>(model_bytes));
  if (static_cast<double>(best.bytes) + retained >= kTwoPow64) {
    return Error{where + ": the allocator term overflows 64 bits"};
  }
  best.allocator_bytes = static_cast<std::uint64_t>(retained);
  best.bytes += best.allocator_bytes;
  return best;
}

Result<Estimate> phase_estimate(const MemoryPlan& plan, const std::string& phase,
                                std::uint64_t model_bytes, std::uint32_t hosts) {
  for (const PlanPhase& p : plan.phases) {
    if (p.phase == phase)
      return estimate_from_plan({plan.name, {p}, plan.overhead_bytes}, model_bytes, hosts);
  }
  return estimate_from_plan(plan, model_bytes, hosts);
}

std::string describe_estimate(const Estimate& estimate) {
  std::string text = "plan " + estimate.plan + ", " + estimate.phase + " dominates: ";
  const std::string model = format_bytes(static_cast<double>(estimate.model_bytes));
  for (const EstimateTerm& term : estimate.breakdown) {
    text += term.state + " " + copies_text(term.copies) + " x " + model + " + ";
  }
  if (estimate.allocator_bytes != 0) {
    text += "allocator " + copies_text(estimate.allocator_copies) + " x " + model + " + ";
  }
  text += "overhead " + format_bytes(static_cast<double>(estimate.overhead_bytes)) + " = " +
          format_bytes(static_cast<double>(estimate.bytes));
  if (estimate.allocator_bytes != 0) {
    text += "; allocator: " + estimate.allocator + " malloc keeps ~" +
            copies_text(estimate.allocator_copies) +
            " model copies of freed memory beyond the plan (measured, docs/admission.md); "
            "remedy: " +
            allocator_remedy(estimate.allocator);
  }
  return text;
}

Result<std::uint64_t> model_bytes_from(std::uint64_t parameter_count, double bytes_per_parameter,
                                       std::uint64_t model_bytes) {
  if (!std::isfinite(bytes_per_parameter) || bytes_per_parameter < 0) {
    return Error{"model.bytes_per_parameter must be a finite number > 0, got " +
                 copies_text(bytes_per_parameter)};
  }
  const bool have_count = parameter_count != 0;
  const bool have_width = bytes_per_parameter > 0;
  if (have_count != have_width) {
    return Error{have_count
                     ? "model.parameter_count is given but model.bytes_per_parameter is 0 or "
                       "missing; give both (e.g. 4 for fp32) or model.model_bytes"
                     : "model.bytes_per_parameter is given but model.parameter_count is 0 or "
                       "missing; give both or model.model_bytes"};
  }
  if (!have_count) {
    if (model_bytes == 0) {
      return Error{
          "model size missing: give model.model_bytes > 0, or model.parameter_count and "
          "model.bytes_per_parameter"};
    }
    return model_bytes;
  }
  const double product = std::round(static_cast<double>(parameter_count) * bytes_per_parameter);
  if (product >= kTwoPow64) {
    return Error{"model.parameter_count " + std::to_string(parameter_count) +
                 " x model.bytes_per_parameter " + copies_text(bytes_per_parameter) +
                 " overflows 64 bits"};
  }
  if (product < 1) {
    return Error{"model.parameter_count x model.bytes_per_parameter is 0 bytes"};
  }
  const auto computed = static_cast<std::uint64_t>(product);
  if (model_bytes != 0) {
    const double diff = std::fabs(static_cast<double>(model_bytes) - product);
    if (diff > 0.01 * product) {
      return Error{"model.model_bytes " + std::to_string(model_bytes) +
                   " disagrees with model.parameter_count x model.bytes_per_parameter = " +
                   std::to_string(computed) + " (more than 1% apart); give one or fix either"};
    }
    return model_bytes;
  }
  return computed;
}

}  // namespace ramguard
