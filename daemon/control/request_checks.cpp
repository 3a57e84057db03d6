#include "control/request_checks.hpp"

#include <unistd.h>

#include <cmath>
#include <string>

#include "ramguard/base/units.hpp"
#include "ramguard/base/utf8.hpp"

namespace ramguard::control {
namespace {

Status out_of_range(const std::string& field, const std::string& value, const std::string& range) {
  return Error{field + " " + value + " is out of range: " + range, ErrorKind::kInvalidArgument};
}

Status bytes_in_range(const std::string& field, std::uint64_t value) {
  if (value <= kMaxRequestBytesFigure) return ok_status();
  return out_of_range(field, std::to_string(value), "at most 1 PB (10^15 bytes)");
}

Status count_in_range(const std::string& field, std::uint64_t value, std::uint64_t max) {
  if (value <= max) return ok_status();
  return out_of_range(field, std::to_string(value), "at most " + std::to_string(max));
}

Status seconds_in_range(const std::string& field, double value) {
  if (std::isfinite(value) && value >= 0 && value <= kMaxProbeSeconds) return ok_status();
  return out_of_range(field, std::isfinite(value) ? std::to_string(value) : "(not finite)",
                      "0 to 86400 seconds");
}

Status check_model(const std::string& at, const v1::ModelDescription& m) {
  if (auto s = bytes_in_range(at + ".modelBytes", m.model_bytes()); !s) return s;
  if (auto s = count_in_range(at + ".parameterCount", m.parameter_count(), kMaxParameterCount);
      !s) {
    return s;
  }
  const double b = m.bytes_per_parameter();
  if (!std::isfinite(b) || b < 0 || b > kMaxBytesPerParameter) {
    return out_of_range(at + ".bytesPerParameter",
                        std::isfinite(b) ? std::to_string(b) : "(not finite)", "0 to 64");
  }
  return ok_status();
}

Status id_in_range(const std::string& field, const std::string& id) {
  if (id.size() <= protocol::kMaxIdBytes) return ok_status();
  return out_of_range(field, "of " + std::to_string(id.size()) + " bytes",
                      "at most " + std::to_string(protocol::kMaxIdBytes) + " bytes");
}

// The first control character (C0, DEL or C1) in `text`, written visibly; empty when none.
std::string first_control(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (control_length(text, i) != 0) return visible_control(text, i);
  }
  return {};
}

// Job names become metric labels: keep them short and printable.
Status check_job(const std::string& job) {
  if (job.size() > protocol::kMaxJobBytes) {
    return Error{"job name is longer than " + std::to_string(protocol::kMaxJobBytes) +
                 " characters"};
  }
  if (auto c = first_control(job); !c.empty()) {
    return Error{"job name contains a control character (" + c + ")"};
  }
  return ok_status();
}

template <typename Labels>
Status check_labels(const Labels& labels) {
  if (static_cast<std::size_t>(labels.size()) > protocol::kMaxLabels) {
    return Error{"at most " + std::to_string(protocol::kMaxLabels) + " labels per run"};
  }
  for (const auto& [k, v] : labels) {
    if (k.empty() || k.size() > protocol::kMaxLabelKeyBytes ||
        v.size() > protocol::kMaxLabelValueBytes) {
      return Error{"label '" + k.substr(0, protocol::kMaxLabelKeyBytes) + "': keys are 1-" +
                   std::to_string(protocol::kMaxLabelKeyBytes) + " characters, values up to " +
                   std::to_string(protocol::kMaxLabelValueBytes)};
    }
  }
  return ok_status();
}

// A run end's failure goes into a verdict's one-line summary, the ledger and the log.
Status check_failure(const std::string& failure) {
  if (failure.size() > protocol::kMaxFailureBytes) {
    return Error{"run end failure is " + std::to_string(failure.size()) + " bytes long; at most " +
                 std::to_string(protocol::kMaxFailureBytes) + " are allowed"};
  }
  if (auto c = first_control(failure); !c.empty()) {
    return Error{"run end failure contains a control character (" + c + ")"};
  }
  return ok_status();
}

// Statistics that contradict themselves would mislead every verdict that reads them; 0 means
// "not reported", so only reported fields are compared.
Status check_allocator_facts(const v1::AllocatorStats& a) {
  const auto bytes = [](std::uint64_t v) { return std::to_string(v); };
  if (a.resident_bytes() != 0 && a.allocated_bytes() > a.resident_bytes()) {
    return Error{"allocator stats contradict themselves: allocated_bytes " +
                 bytes(a.allocated_bytes()) + " is larger than resident_bytes " +
                 bytes(a.resident_bytes())};
  }
  if (a.resident_bytes() != 0 && a.retained_bytes() > a.resident_bytes()) {
    return Error{
        "allocator stats contradict themselves: retained_bytes (free bytes the "
        "allocator keeps) " +
        bytes(a.retained_bytes()) + " is larger than resident_bytes " + bytes(a.resident_bytes())};
  }
  if (!protocol::is_allocator_name(a.allocator())) {
    return Error{"allocator stats: allocator name must be [a-z0-9_.-]{0,32}"};
  }
  return ok_status();
}

// Each figure in range, then the figures against each other and the name.
Status check_allocator(const std::string& at, const v1::AllocatorStats& a) {
  for (const auto& [name, value] : {std::pair{".allocatedBytes", a.allocated_bytes()},
                                    std::pair{".activeBytes", a.active_bytes()},
                                    std::pair{".residentBytes", a.resident_bytes()},
                                    std::pair{".retainedBytes", a.retained_bytes()}}) {
    if (auto s = bytes_in_range(at + name, value); !s) return s;
  }
  return check_allocator_facts(a);
}

// A probe's RSS may rise while it runs (gc allocates, other threads run): "after" above "before"
// is allowed, and the verdicts clamp the drop at zero.
// An RSS above the node's memory is no measurement: "gc freed 1000000.00 GB" would go into a
// verdict's summary and the growth class.
Status check_probe(const std::string& at, std::uint64_t before, std::uint64_t after, double seconds,
                   std::uint64_t node_memory_bytes) {
  if (auto s = bytes_in_range(at + ".rssBeforeBytes", before); !s) return s;
  if (auto s = bytes_in_range(at + ".rssAfterBytes", after); !s) return s;
  for (const auto& [name, value] :
       {std::pair{".rssBeforeBytes", before}, std::pair{".rssAfterBytes", after}}) {
    if (node_memory_bytes != 0 && value > node_memory_bytes) {
      return out_of_range(at + name, std::to_string(value),
                          "at most this node's memory, " +
                              format_bytes(static_cast<double>(node_memory_bytes)) + " (" +
                              std::to_string(node_memory_bytes) +
                              " bytes): a process's RSS cannot be larger");
    }
  }
  if (auto s = seconds_in_range(at + ".durationSeconds", seconds); !s) return s;
  return ok_status();
}

// A gc or trim probe message: its RSS before and after, and its duration.
template <typename Probe>
Status check_probe(const std::string& at, const Probe& p, std::uint64_t node_memory_bytes) {
  return check_probe(at, p.rss_before_bytes(), p.rss_after_bytes(), p.duration_seconds(),
                     node_memory_bytes);
}

}  // namespace

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;  // unknown: only the 1 PB bound applies
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

Status check_request(const v1::Request& request, std::uint64_t node_memory_bytes) {
  switch (request.command_case()) {
    case v1::Request::kRunStart: {
      const auto& r = request.run_start();
      if (auto s = id_in_range("runStart.reservationId", r.reservation_id()); !s) return s;
      if (auto s = bytes_in_range("runStart.modelBytes", r.model_bytes()); !s) return s;
      if (auto s = count_in_range("runStart.hosts", r.hosts(), kMaxHosts); !s) return s;
      if (auto s =
              count_in_range("runStart.declaredRounds", r.declared_rounds(), kMaxDeclaredRounds);
          !s) {
        return s;
      }
      if (auto s = check_job(r.job()); !s) return s;
      if (auto s = check_labels(r.labels()); !s) return s;
      if (r.cgroup_path().size() > protocol::kMaxCgroupPathBytes ||
          r.cgroup_path().find('\0') != std::string::npos) {
        return Error{"cgroup_path is a path of at most " +
                     std::to_string(protocol::kMaxCgroupPathBytes) + " bytes"};
      }
      return ok_status();
    }
    case v1::Request::kAdmit: {
      const auto& a = request.admit();
      if (auto s = bytes_in_range("admit.estimateBytes", a.estimate_bytes()); !s) return s;
      if (auto s = count_in_range("admit.hosts", a.hosts(), kMaxHosts); !s) return s;
      if (a.has_model()) {
        if (auto s = check_model("admit.model", a.model()); !s) return s;
      }
      if (auto s = check_job(a.job()); !s) return s;
      if (!protocol::is_allocator_name(a.allocator())) {
        return Error{"admit: allocator must be [a-z0-9_.-]{0,32} (glibc, jemalloc or empty)"};
      }
      return ok_status();
    }
    case v1::Request::kMark: {
      const auto& m = request.mark();
      if (auto s = id_in_range("mark.runId", m.run_id()); !s) return s;
      if (m.phase().size() > protocol::kMaxPhaseBytes) {
        return out_of_range("mark.phase", "of " + std::to_string(m.phase().size()) + " bytes",
                            "at most " + std::to_string(protocol::kMaxPhaseBytes) + " bytes");
      }
      if (m.at_unix_us() < 0 || m.at_unix_us() > kMaxUnixUs) {
        return out_of_range("mark.atUnixUs", std::to_string(m.at_unix_us()),
                            "0 to " + std::to_string(kMaxUnixUs) + " (microseconds since 1970)");
      }
      if (m.deadline_unix_us() < 0) {
        return out_of_range("mark.deadlineUnixUs", std::to_string(m.deadline_unix_us()),
                            "0 or more");
      }
      if (m.has_allocator()) {
        if (auto s = check_allocator("mark.allocator", m.allocator()); !s) return s;
      }
      if (m.has_gc()) {
        if (auto s = check_probe("mark.gc", m.gc(), node_memory_bytes); !s) return s;
      }
      if (m.kind() != v1::MarkRequest::PHASE_BEGIN && m.kind() != v1::MarkRequest::PHASE_END &&
          m.kind() != v1::MarkRequest::ROUND_END) {
        return Error{"mark needs a kind: PHASE_BEGIN, PHASE_END or ROUND_END"};
      }
      if (m.has_census() && m.kind() != v1::MarkRequest::ROUND_END) {
        return Error{"mark.census goes with a ROUND_END only"};
      }
      return ok_status();
    }
    case v1::Request::kRunEnd: {
      const auto& e = request.run_end();
      if (auto s = id_in_range("runEnd.runId", e.run_id()); !s) return s;
      if (auto s = bytes_in_range("runEnd.exitMaxRssBytes", e.exit_max_rss_bytes()); !s) return s;
      if (e.has_allocator()) {
        if (auto s = check_allocator("runEnd.allocator", e.allocator()); !s) return s;
      }
      if (e.has_gc()) {
        if (auto s = check_probe("runEnd.gc", e.gc(), node_memory_bytes); !s) return s;
      }
      if (e.has_trim()) {
        if (auto s = check_probe("runEnd.trim", e.trim(), node_memory_bytes); !s) return s;
      }
      if (auto s = check_failure(e.failure()); !s) return s;
      return ok_status();
    }
    case v1::Request::kRelease: {
      const std::string& id = request.release().reservation_id();
      if (id.empty()) return Error{"release needs a reservation id"};
      return id_in_range("release.reservationId", id);
    }
    case v1::Request::kStatus:
      return id_in_range("status.runId", request.status().run_id());
    case v1::Request::kReport:
      return id_in_range("report.runId", request.report().run_id());
    case v1::Request::kCompare:
      for (const std::string& id : request.compare().run_ids()) {
        if (auto s = id_in_range("compare.runIds", id); !s) return s;
      }
      if (static_cast<std::size_t>(request.compare().run_ids_size()) > protocol::kMaxCompareRuns) {
        return Error{"compare at most " + std::to_string(protocol::kMaxCompareRuns) + " runs"};
      }
      return ok_status();
    default:
      return ok_status();
  }
}

}  // namespace ramguard::control
