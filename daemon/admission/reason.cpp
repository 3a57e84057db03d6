#include "admission/reason.hpp"

#include <limits>

#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kMaxSigned = std::numeric_limits<std::int64_t>::max();

// A hostile estimate near 2^64 must not wrap around into "fits".
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > kMax - b ? kMax : a + b;
}

std::string gb(std::uint64_t bytes) {
  return format_bytes(static_cast<double>(bytes));
}

}  // namespace

AdmissionOutcome evaluate(const AdmissionSum& sum) {
  AdmissionOutcome out;
  out.total_bytes =
      saturating_add(saturating_add(sum.baseline_bytes, sum.reserved_bytes), sum.estimate_bytes);
  out.limit_bytes = sum.budget_bytes > sum.margin_bytes ? sum.budget_bytes - sum.margin_bytes : 0;
  // A zero estimate means the caller forgot it; admitting it would reserve nothing.
  out.fits =
      out.total_bytes <= out.limit_bytes && out.total_bytes != kMax && sum.estimate_bytes != 0;
  if (out.total_bytes <= out.limit_bytes) {
    const std::uint64_t room = out.limit_bytes - out.total_bytes;
    out.headroom_bytes = static_cast<std::int64_t>(room > kMaxSigned ? kMaxSigned : room);
  } else {
    const std::uint64_t over = out.total_bytes - out.limit_bytes;
    out.headroom_bytes = -static_cast<std::int64_t>(over > kMaxSigned ? kMaxSigned : over);
  }
  return out;
}

std::string admission_reason(const AdmissionSum& sum, const AdmissionOutcome& outcome,
                             const std::string& estimate_source, const ReasonDetail& detail) {
  std::string text = outcome.fits ? "admitted: " : "refused: ";
  text += "baseline " + gb(sum.baseline_bytes);
  if (detail.committed_detail.empty()) {
    text += " + reserved " + gb(sum.reserved_bytes);
  } else {
    text += " + committed " + gb(sum.reserved_bytes) + " (" + detail.committed_detail + ")";
  }
  text += " + estimate " + gb(sum.estimate_bytes);
  if (!estimate_source.empty()) text += " (" + estimate_source + ")";
  text += " = " + gb(outcome.total_bytes) +
          (outcome.total_bytes <= outcome.limit_bytes ? " <= " : " > ") + "budget " +
          gb(sum.budget_bytes) +
          (detail.budget_cap.empty() || detail.budget_cap == "budget"
               ? ""
               : " (" + detail.budget_cap + " cap)") +
          " - margin " + gb(sum.margin_bytes) + "; headroom " +
          format_bytes(static_cast<double>(outcome.headroom_bytes));
  if (!detail.caps.empty()) text += "; caps: " + detail.caps;
  if (!outcome.fits && sum.estimate_bytes != 0 && !detail.budget_cap.empty()) {
    text += "; refused by the " + detail.budget_cap + " cap";
  }
  if (sum.estimate_bytes == 0) text += "; an estimate of 0 B is refused: give a real estimate";
  return text;
}

}  // namespace ramguard
