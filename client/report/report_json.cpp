// The run report as stable JSON; client/report/report.schema.json describes it.
#include "report/census_section.hpp"
#include "report/json_writer.hpp"
#include "report/render.hpp"
#include "report/run_facts.hpp"

namespace ramguard::report {
namespace {

void reading(JsonWriter& w, const v1::Reading& r) {
  w.begin_object()
      .field("at_unix_ms", static_cast<std::int64_t>(r.at_unix_ms()))
      .field("complete", r.complete())
      .field("rss_bytes", static_cast<std::uint64_t>(r.rss_bytes()))
      .field("anon_bytes", static_cast<std::uint64_t>(r.anon_bytes()))
      .field("file_bytes", static_cast<std::uint64_t>(r.file_bytes()))
      .field("shmem_bytes", static_cast<std::uint64_t>(r.shmem_bytes()))
      .field("swap_bytes", static_cast<std::uint64_t>(r.swap_bytes()))
      .field("hwm_bytes", static_cast<std::uint64_t>(r.hwm_bytes()));
  if (r.pss_bytes() > 0) w.field("pss_bytes", static_cast<std::uint64_t>(r.pss_bytes()));
  w.end_object();
}

void verdict(JsonWriter& w, const v1::Verdict& v) {
  w.begin_object()
      .field("kind", v.kind())
      .field("severity", severity_name(v.severity()))
      .field("passed", v.passed())
      .field("cleared", v.cleared())
      .field("round", static_cast<std::uint32_t>(v.round()))
      .field("phase", v.phase())
      .field("summary", v.summary())
      .field("at_unix_ms", static_cast<std::int64_t>(v.at_unix_ms()));
  w.key("figures").begin_object();
  for (const auto& [name, value] : sorted_figures(v)) w.field(name, value);
  w.end_object().end_object();
}

}  // namespace

void write_verdicts(JsonWriter& w, const google::protobuf::RepeatedPtrField<v1::Verdict>& list) {
  w.begin_array();
  for (const v1::Verdict& v : list) verdict(w, v);
  w.end_array();
}

std::string report_json(const v1::ReportReply& reply) {
  const v1::RunStatus& run = reply.run();
  JsonWriter w;
  w.begin_object().field("schema", "ramguard.report/1");

  w.key("run").begin_object();
  w.field("run_id", run.run_id()).field("job", run.job());
  w.key("labels").begin_object();
  for (const auto& [key, value] : sorted_labels(run.labels())) w.field(key, value);
  w.end_object();
  w.field("state", run.state())
      .field("pid", static_cast<std::uint32_t>(run.pid()))
      .field("scope", run.scope().empty() ? std::string("process") : run.scope())
      .field("cgroup_dir", run.cgroup_dir())
      .field("started_unix_ms", static_cast<std::int64_t>(run.started_unix_ms()))
      .field("ended_unix_ms", static_cast<std::int64_t>(run.ended_unix_ms()))
      .field("model_bytes", static_cast<std::uint64_t>(run.model_bytes()))
      .field("declared_rounds", static_cast<std::uint32_t>(run.declared_rounds()))
      .field("rounds", rounds_seen(run))
      .field("round_ends_held", static_cast<std::uint32_t>(run.boundaries_size()))
      .field("hosts", static_cast<std::uint32_t>(run.hosts()))
      .field("current_phase", run.current_phase());
  w.end_object();

  w.key("baseline");
  run.has_baseline() ? reading(w, run.baseline()) : void(w.null());
  w.key("last");
  run.has_last() ? reading(w, run.last()) : void(w.null());

  w.key("peak").begin_object();
  w.field("bytes", static_cast<std::uint64_t>(run.peak_bytes()))
      .field("exact", run.peak_exact())
      .field("source", run.peak_exact() ? "high_water_mark" : "samples");
  w.end_object();

  w.key("estimate");
  if (run.estimate_bytes() > 0) {
    w.begin_object()
        .field("bytes", static_cast<std::uint64_t>(run.estimate_bytes()))
        .field("peak_ratio", estimate_ratio(run))
        .end_object();
  } else {
    w.null();
  }

  w.key("phases").begin_array();
  for (const v1::PhaseStat& p : run.phases()) {
    w.begin_object()
        .field("round", static_cast<std::uint32_t>(p.round()))
        .field("phase", p.phase())
        .field("begin_seconds", p.begin_seconds())
        .field("duration_seconds", p.duration_seconds())
        .field("peak_bytes", static_cast<std::uint64_t>(p.peak_bytes()))
        .field("peak_exact", p.peak_exact())
        .field("plan_bytes", static_cast<std::uint64_t>(p.plan_bytes()))
        .field("allocated_bytes", static_cast<std::uint64_t>(p.allocated_bytes()))
        .end_object();
  }
  w.end_array();

  w.key("boundaries").begin_array();
  for (const v1::BoundaryReading& b : run.boundaries()) {
    w.begin_object()
        .field("round", static_cast<std::uint32_t>(b.round()))
        .field("floor_bytes", static_cast<std::uint64_t>(b.floor_bytes()));
    w.key("reading");
    reading(w, b.reading());
    if (b.has_allocator()) {
      w.key("allocator")
          .begin_object()
          .field("allocator", b.allocator().allocator())
          .field("live_bytes", static_cast<std::uint64_t>(b.allocator().allocated_bytes()))
          .field("free_bytes", static_cast<std::uint64_t>(b.allocator().retained_bytes()))
          .field("resident_bytes", static_cast<std::uint64_t>(b.allocator().resident_bytes()))
          .end_object();
    }
    w.end_object();
  }
  w.end_array();

  w.key("phase_gaps").begin_array();
  for (const PhaseGap& g : phase_gaps(run)) {
    w.begin_object()
        .field("round", g.round)
        .field("from_phase", g.from_phase)
        .field("to_phase", g.to_phase)
        .field("seconds", g.seconds)
        .end_object();
  }
  w.end_array();

  w.key("release");
  if (const v1::Verdict* release = find_verdict(run, "release")) {
    verdict(w, *release);
  } else {
    w.null();
  }

  w.key("verdicts");
  write_verdicts(w, run.verdicts());

  if (!run.censuses().empty()) {
    w.key("holders");
    census_json(w, run);
  }

  w.key("samples").begin_array();
  for (const v1::SamplePoint& s : reply.samples()) {
    w.begin_object()
        .field("at_unix_ms", static_cast<std::int64_t>(s.at_unix_ms()))
        .field("rss_bytes", static_cast<std::uint64_t>(s.rss_bytes()))
        .field("min_rss_bytes", static_cast<std::uint64_t>(s.min_rss_bytes()))
        .field("max_rss_bytes", static_cast<std::uint64_t>(s.max_rss_bytes()))
        .field("anon_bytes", static_cast<std::uint64_t>(s.anon_bytes()))
        .field("file_bytes", static_cast<std::uint64_t>(s.file_bytes()))
        .end_object();
  }
  w.end_array();

  w.end_object();
  return w.str();
}

}  // namespace ramguard::report
