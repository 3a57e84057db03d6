#include "control/census_convert.hpp"

#include <initializer_list>
#include <string>
#include <utility>

#include "control/request_checks.hpp"
#include "ramguard/base/utf8.hpp"

namespace ramguard::control {

namespace {

// Texts of a census go into reports and verdict summaries: short, printable.
Status check_text(const std::string& text, const std::string& what) {
  if (text.size() > kCensusMaxText) {
    return Error{what + " is " + std::to_string(text.size()) + " bytes long; at most " +
                 std::to_string(kCensusMaxText) + " are allowed"};
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (control_length(text, i) != 0) {
      return Error{what + " contains a control character (" + visible_control(text, i) + ")"};
    }
  }
  return ok_status();
}

// Byte figures as every other size of a request: at most 1 PB (also keeps their sums exact).
Status check_bytes(std::initializer_list<std::pair<const char*, std::uint64_t>> figures,
                   const std::string& at) {
  for (const auto& [name, value] : figures) {
    if (value > kMaxRequestBytesFigure) {
      return Error{at + "." + name + " " + std::to_string(value) +
                       " is out of range: at most 1 PB (10^15 bytes)",
                   ErrorKind::kInvalidArgument};
    }
  }
  return ok_status();
}

}  // namespace

Result<CensusRecord> census_from_proto(const v1::Census& in, const char* field) {
  const std::string f = field;
  if (in.mode() != "full" && in.mode() != "roots") {
    return Error{f + ".mode must be \"full\" or \"roots\", not \"" +
                 valid_utf8(in.mode().substr(0, 32)) + "\""};
  }
  if (static_cast<std::size_t>(in.groups_size()) > kCensusMaxGroups) {
    return Error{f + ".groups has " + std::to_string(in.groups_size()) + " groups; at most " +
                 std::to_string(kCensusMaxGroups) + " are allowed"};
  }
  if (auto s = check_text(in.partial(), f + ".partial"); !s) return s.error();
  if (auto s = check_bytes({{"hostBytes", in.host_bytes()},
                            {"gpuBytes", in.gpu_bytes()},
                            {"pinnedBytes", in.pinned_bytes()},
                            {"sharedBytes", in.shared_bytes()},
                            {"unreachableBytes", in.unreachable_bytes()},
                            {"otherBytes", in.other_bytes()}},
                           f);
      !s) {
    return s.error();
  }
  if (!(in.duration_seconds() >= 0 && in.duration_seconds() < 1e6)) {
    return Error{f + ".durationSeconds must be between 0 and 1e6"};
  }
  CensusRecord out;
  out.mode = in.mode();
  out.partial = in.partial();
  out.duration_seconds = in.duration_seconds();
  out.objects_seen = in.objects_seen();
  out.storages = in.storages();
  out.host_bytes = in.host_bytes();
  out.gpu_bytes = in.gpu_bytes();
  out.pinned_bytes = in.pinned_bytes();
  out.shared_bytes = in.shared_bytes();
  out.unreachable_bytes = in.unreachable_bytes();
  out.other_groups = in.other_groups();
  out.other_bytes = in.other_bytes();
  std::size_t ranges = 0;
  std::uint64_t listed = 0;
  for (int i = 0; i < in.groups_size(); ++i) {
    const v1::CensusGroup& g = in.groups(i);
    const std::string at = f + ".groups[" + std::to_string(i) + "]";
    if (g.holder().empty()) return Error{at + ".holder is empty"};
    if (auto s = check_text(g.holder(), at + ".holder"); !s) return s.error();
    if (auto s = check_text(g.cycle(), at + ".cycle"); !s) return s.error();
    if (auto s = check_text(g.kind(), at + ".kind"); !s) return s.error();
    if (auto s = check_text(g.dtype(), at + ".dtype"); !s) return s.error();
    if (auto s = check_bytes({{"bytes", g.bytes()},
                              {"gpuBytes", g.gpu_bytes()},
                              {"pinnedBytes", g.pinned_bytes()},
                              {"sharedBytes", g.shared_bytes()}},
                             at);
        !s) {
      return s.error();
    }
    if (g.pinned_bytes() > g.bytes() || g.shared_bytes() > g.bytes()) {
      return Error{at + ": pinnedBytes and sharedBytes must not exceed bytes"};
    }
    ranges += static_cast<std::size_t>(g.ranges_size());
    if (ranges > kCensusMaxRanges) {
      return Error{f + " has more than " + std::to_string(kCensusMaxRanges) + " ranges"};
    }
    CensusGroup group;
    group.holder = g.holder();
    group.reachable = g.reachable();
    group.cycle = g.cycle();
    group.kind = g.kind();
    group.bytes = g.bytes();
    group.gpu_bytes = g.gpu_bytes();
    group.storages = g.storages();
    group.objects = g.objects();
    group.dtype = g.dtype();
    group.pinned_bytes = g.pinned_bytes();
    group.shared_bytes = g.shared_bytes();
    std::uint64_t in_ranges = 0;
    for (const v1::CensusRange& r : g.ranges()) {
      if (r.nbytes() == 0 || r.nbytes() > kMaxRequestBytesFigure ||
          r.address() + r.nbytes() < r.address()) {
        return Error{at + ".ranges: a range is empty or wraps around the address space"};
      }
      in_ranges += r.nbytes();
      group.ranges.push_back({r.address(), r.nbytes()});
    }
    if (in_ranges > g.bytes()) {
      return Error{at + ": its ranges hold " + std::to_string(in_ranges) +
                   " bytes, more than its " + std::to_string(g.bytes()) + " bytes"};
    }
    listed += g.bytes();
    out.groups.push_back(std::move(group));
  }
  if (listed + out.other_bytes > out.host_bytes) {
    return Error{f + ": its groups and otherBytes hold more than its hostBytes"};
  }
  if (out.unreachable_bytes > out.host_bytes) {
    return Error{f + ".unreachableBytes exceeds hostBytes"};
  }
  return out;
}

void to_proto(const CensusRecord& in, v1::RoundCensus& out) {
  out.set_round(in.round);
  out.set_at_end(in.at_end);
  out.set_at_unix_ms(in.at_unix_ms);
  v1::Census& c = *out.mutable_census();
  c.set_mode(in.mode);
  c.set_partial(in.partial);
  c.set_duration_seconds(in.duration_seconds);
  c.set_objects_seen(in.objects_seen);
  c.set_storages(in.storages);
  c.set_host_bytes(in.host_bytes);
  c.set_gpu_bytes(in.gpu_bytes);
  c.set_pinned_bytes(in.pinned_bytes);
  c.set_shared_bytes(in.shared_bytes);
  c.set_unreachable_bytes(in.unreachable_bytes);
  c.set_other_groups(in.other_groups);
  c.set_other_bytes(in.other_bytes);
  for (const CensusGroup& g : in.groups) {
    v1::CensusGroup& o = *c.add_groups();
    o.set_holder(g.holder);
    o.set_reachable(g.reachable);
    o.set_cycle(g.cycle);
    o.set_kind(g.kind);
    o.set_bytes(g.bytes);
    o.set_gpu_bytes(g.gpu_bytes);
    o.set_storages(g.storages);
    o.set_objects(g.objects);
    o.set_dtype(g.dtype);
    o.set_pinned_bytes(g.pinned_bytes);
    o.set_shared_bytes(g.shared_bytes);
  }
  const CensusPlacement& p = in.placement;
  v1::CensusPlacement& op = *out.mutable_placement();
  op.set_anon_bytes(p.anon_bytes);
  op.set_file_bytes(p.file_bytes);
  op.set_shmem_bytes(p.shmem_bytes);
  op.set_device_bytes(p.device_bytes);
  op.set_unmapped_bytes(p.unmapped_bytes);
  op.set_resident_bytes(p.resident_bytes);
  op.set_resident_known(p.resident_known);
  for (const std::string& file : p.files) op.add_files(valid_utf8(file));
  op.set_error(valid_utf8(p.error));
  out.set_rss_bytes(in.rss_bytes);
  out.set_counted_bytes(in.counted_bytes);
  out.set_allocator_free_bytes(in.allocator_free_bytes);
  out.set_unexplained_bytes(in.unexplained_bytes());
}

}  // namespace ramguard::control
