#include "report/census_section.hpp"

#include <cmath>
#include <set>

#include "report/format.hpp"
#include "report/table.hpp"

namespace ramguard::report {

namespace {

std::string holder_label(const v1::CensusGroup& g) {
  return g.reachable() ? g.holder() : g.holder() + " (cycle)";
}

std::string copies(std::uint64_t bytes, std::uint64_t model_bytes) {
  if (model_bytes == 0) return "-";
  return format_fixed(static_cast<double>(bytes) / static_cast<double>(model_bytes), 2);
}

std::string census_name(const v1::RoundCensus& c) {
  return c.at_end() ? "the end" : "round " + std::to_string(c.round());
}

}  // namespace

HolderChanges holder_changes(const v1::Census& before, const v1::Census& after) {
  std::set<std::string> was, now;
  for (const v1::CensusGroup& g : before.groups()) was.insert(g.holder());
  for (const v1::CensusGroup& g : after.groups()) now.insert(g.holder());
  HolderChanges out;
  for (const std::string& h : now) {
    if (was.count(h) == 0) out.born.push_back(h);
  }
  for (const std::string& h : was) {
    if (now.count(h) == 0) out.died.push_back(h);
  }
  return out;
}

std::string census_status_line(const v1::RunStatus& run, bool binary) {
  if (run.censuses().empty()) return {};
  auto b = [&](std::uint64_t n) { return format_bytes(static_cast<double>(n), binary); };
  const v1::RoundCensus& rc = *run.censuses().rbegin();
  std::string out = "census at " + census_name(rc) + ": ";
  if (rc.census().groups().empty()) {
    out += "no holder listed";
  } else {
    const v1::CensusGroup& top = rc.census().groups(0);
    out += "largest holder " + escape_text(holder_label(top)) + " " + b(top.bytes());
  }
  const std::int64_t gap = rc.unexplained_bytes();
  return out + ", unexplained " + (gap < 0 ? "-" : "") +
         b(static_cast<std::uint64_t>(std::llabs(gap)));
}

void census_text_section(const v1::RunStatus& run, bool binary, std::string& out) {
  if (run.censuses().empty()) return;
  auto b = [&](std::uint64_t n) { return format_bytes(static_cast<double>(n), binary); };
  out += "\nWhat holds the memory (the coordinator's censuses)\n";
  const v1::Census* previous = nullptr;
  for (const v1::RoundCensus& rc : run.censuses()) {
    const v1::Census& c = rc.census();
    out += "  " + census_name(rc) + ": " + b(c.host_bytes()) + " in " +
           std::to_string(c.storages()) + " storages (" +
           copies(c.host_bytes(), run.model_bytes()) + " model copies)";
    if (c.gpu_bytes() > 0) out += ", GPU " + b(c.gpu_bytes()) + " apart";
    out += "; " + b(c.unreachable_bytes()) + " reachable only through reference cycles; " +
           escape_text(c.mode()) + " census " + format_seconds(c.duration_seconds()) +
           (c.partial().empty() ? "" : ", PARTIAL: " + escape_text(c.partial())) + "\n";
    const v1::CensusPlacement& p = rc.placement();
    const std::uint64_t census_resident = p.resident_known() ? p.resident_bytes() : c.host_bytes();
    const std::int64_t gap = rc.unexplained_bytes();
    out += "    unexplained " + std::string(gap < 0 ? "-" : "") +
           b(static_cast<std::uint64_t>(std::llabs(gap))) + ": counted " + b(rc.counted_bytes()) +
           " = census " + (p.resident_known() ? "resident " : "") + b(census_resident) +
           " + allocator free " + b(rc.allocator_free_bytes()) + " + unexplained\n";
    if (!p.error().empty()) {
      out += "    not placed: " + escape_text(p.error()) + "\n";
    } else {
      out += "    placed in: anon " + b(p.anon_bytes()) + ", file " + b(p.file_bytes()) +
             ", shmem " + b(p.shmem_bytes()) + ", device " + b(p.device_bytes());
      if (p.unmapped_bytes() > 0) out += ", in no mapping " + b(p.unmapped_bytes());
      out += "\n";
      for (const std::string& f : p.files()) out += "    file: " + escape_text(f) + "\n";
    }
    Table t;
    t.add_column("holder");
    t.add_column("kind");
    t.add_column("bytes", Align::kRight);
    t.add_column("copies", Align::kRight);
    t.add_column("since previous");
    const HolderChanges changes =
        previous != nullptr ? holder_changes(*previous, c) : HolderChanges{};
    const std::set<std::string> born(changes.born.begin(), changes.born.end());
    for (const v1::CensusGroup& g : c.groups()) {
      t.add_row({escape_text(holder_label(g)), escape_text(g.kind()), b(g.bytes()),
                 copies(g.bytes(), run.model_bytes()),
                 previous == nullptr ? "" : (born.count(g.holder()) ? "born" : "kept")});
    }
    if (c.other_groups() > 0) {
      t.add_row({std::to_string(c.other_groups()) + " more groups", "", b(c.other_bytes()),
                 copies(c.other_bytes(), run.model_bytes()), ""});
    }
    out += t.text("    ");
    for (const v1::CensusGroup& g : c.groups()) {
      if (!g.reachable() && !g.cycle().empty()) {
        out += "    cycle of " + escape_text(g.holder()) + ": " + escape_text(g.cycle()) + "\n";
        break;  // one shape: the others are usually the same
      }
    }
    for (const std::string& d : changes.died) out += "    died: " + escape_text(d) + "\n";
    previous = &c;
  }
}

void census_json(JsonWriter& w, const v1::RunStatus& run) {
  w.begin_array();
  const v1::Census* previous = nullptr;
  for (const v1::RoundCensus& rc : run.censuses()) {
    const v1::Census& c = rc.census();
    const v1::CensusPlacement& p = rc.placement();
    w.begin_object()
        .field("round", static_cast<std::uint32_t>(rc.round()))
        .field("at_end", rc.at_end())
        .field("at_unix_ms", static_cast<std::int64_t>(rc.at_unix_ms()))
        .field("mode", c.mode())
        .field("partial", c.partial())
        .field("duration_seconds", c.duration_seconds())
        .field("objects_seen", static_cast<std::uint64_t>(c.objects_seen()))
        .field("storages", static_cast<std::uint32_t>(c.storages()))
        .field("host_bytes", static_cast<std::uint64_t>(c.host_bytes()))
        .field("gpu_bytes", static_cast<std::uint64_t>(c.gpu_bytes()))
        .field("unreachable_bytes", static_cast<std::uint64_t>(c.unreachable_bytes()))
        .field("other_groups", static_cast<std::uint32_t>(c.other_groups()))
        .field("other_bytes", static_cast<std::uint64_t>(c.other_bytes()))
        .field("rss_bytes", static_cast<std::uint64_t>(rc.rss_bytes()))
        .field("counted_bytes", static_cast<std::uint64_t>(rc.counted_bytes()))
        .field("allocator_free_bytes", static_cast<std::uint64_t>(rc.allocator_free_bytes()))
        .field("unexplained_bytes", static_cast<std::int64_t>(rc.unexplained_bytes()));
    w.key("placement")
        .begin_object()
        .field("anon_bytes", static_cast<std::uint64_t>(p.anon_bytes()))
        .field("file_bytes", static_cast<std::uint64_t>(p.file_bytes()))
        .field("shmem_bytes", static_cast<std::uint64_t>(p.shmem_bytes()))
        .field("device_bytes", static_cast<std::uint64_t>(p.device_bytes()))
        .field("unmapped_bytes", static_cast<std::uint64_t>(p.unmapped_bytes()));
    w.key("resident_bytes");
    p.resident_known() ? void(w.value(static_cast<std::uint64_t>(p.resident_bytes())))
                       : void(w.null());
    w.key("files").begin_array();
    for (const std::string& f : p.files()) w.value(f);
    w.end_array().field("error", p.error()).end_object();
    w.key("groups").begin_array();
    for (const v1::CensusGroup& g : c.groups()) {
      w.begin_object()
          .field("holder", g.holder())
          .field("reachable", g.reachable())
          .field("cycle", g.cycle())
          .field("kind", g.kind())
          .field("bytes", static_cast<std::uint64_t>(g.bytes()))
          .field("gpu_bytes", static_cast<std::uint64_t>(g.gpu_bytes()))
          .field("storages", static_cast<std::uint32_t>(g.storages()))
          .field("objects", static_cast<std::uint32_t>(g.objects()))
          .field("dtype", g.dtype())
          .field("pinned_bytes", static_cast<std::uint64_t>(g.pinned_bytes()))
          .field("shared_bytes", static_cast<std::uint64_t>(g.shared_bytes()))
          .end_object();
    }
    w.end_array();
    const HolderChanges changes =
        previous != nullptr ? holder_changes(*previous, c) : HolderChanges{};
    w.key("born").begin_array();
    for (const std::string& h : changes.born) w.value(h);
    w.end_array().key("died").begin_array();
    for (const std::string& h : changes.died) w.value(h);
    w.end_array().end_object();
    previous = &c;
  }
  w.end_array();
}

}  // namespace ramguard::report
