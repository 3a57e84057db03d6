#include "config/schema.hpp"

#include <cstdio>
#include <limits>
#include <optional>
#include <utility>

#include "config/http_url.hpp"
#include "config/limits.hpp"
#include "config/values.hpp"

namespace ramguard {
namespace {

using std::chrono::nanoseconds;
constexpr std::uint64_t kAnySize = std::numeric_limits<std::int64_t>::max();

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Small adaptors so each key below is one line: what it is, where it goes, what is allowed.
struct Reader {
  YamlWalk& walk;

  YamlWalk::Visit size(std::uint64_t& out, std::uint64_t min, std::uint64_t max = kAnySize) {
    return [this, &out, min, max](const YAML::Node& n, const std::string& p) {
      walk.value(n, p, "a size", out,
                 [&](std::string_view t) { return parse_size_in(t, min, max); });
    };
  }
  YamlWalk::Visit duration(nanoseconds& out, nanoseconds min, nanoseconds max) {
    return [this, &out, min, max](const YAML::Node& n, const std::string& p) {
      walk.value(n, p, "a duration", out,
                 [&](std::string_view t) { return parse_duration_in(t, min, max); });
    };
  }
  YamlWalk::Visit count(std::uint32_t& out, std::uint32_t min, std::uint32_t max) {
    return [this, &out, min, max](const YAML::Node& n, const std::string& p) {
      walk.value(n, p, "a whole number", out,
                 [&](std::string_view t) { return parse_count(t, min, max); });
    };
  }
  // A number in (low, high] (or [low, high] when low_inclusive).
  YamlWalk::Visit real(double& out, double low, bool low_inclusive, double high) {
    return [this, &out, low, low_inclusive, high](const YAML::Node& n, const std::string& p) {
      walk.value(n, p, "a number", out, [&](std::string_view t) -> Result<double> {
        auto v = parse_real(t);
        if (!v.ok()) return v;
        if ((low_inclusive ? *v < low : *v <= low) || *v > high) {
          return Error{"'" + std::string(t) + "' is out of range; allowed " +
                       (low_inclusive ? "[" : "(") + number_text(low) + ", " + number_text(high) +
                       "]"};
        }
        return v;
      });
    };
  }
  // A visit that also records that the key was given (a byte size then wins over model copies).
  static YamlWalk::Visit given(YamlWalk::Visit visit, bool& was_given) {
    return [visit = std::move(visit), &was_given](const YAML::Node& n, const std::string& p) {
      was_given = true;
      visit(n, p);
    };
  }
  YamlWalk::Visit copies(double& out) { return real(out, 0, false, limits::kMaxThresholdCopies); }
  YamlWalk::Visit flag(bool& out) {
    return [this, &out](const YAML::Node& n, const std::string& p) {
      walk.value(n, p, "true or false", out, parse_bool);
    };
  }
  YamlWalk::Visit text(std::string& out) {
    return [this, &out](const YAML::Node& n, const std::string& p) {
      walk.value(n, p, "a string", out, [](std::string_view t) -> Result<std::string> {
        if (t.find('\0') != std::string_view::npos) return Error{"contains a NUL byte"};
        return std::string(t);
      });
    };
  }
  YamlWalk::Visit endpoint(Endpoint& out) {
    return [this, &out](const YAML::Node& n, const std::string& p) {
      walk.value(n, p, "HOST:PORT", out, parse_endpoint);
    };
  }
};

void read_sampling(Reader r, const YAML::Node& n, const std::string& p, SamplingConfig& c) {
  r.walk.fields(
      n, p,
      {{"interval", r.duration(c.interval, limits::kMinInterval, limits::kMaxInterval)},
       {"full_resolution_window",
        r.duration(c.full_resolution_window, nanoseconds(0), limits::kMaxWindow)},
       {"bucket", r.duration(c.bucket, limits::kMinInterval, limits::kMaxWindow)},
       {"max_buckets", r.count(c.max_buckets, 1, limits::kMaxBuckets)},
       {"peak_refresh", r.duration(c.peak_refresh, limits::kMinInterval, limits::kMaxWindow)},
       {"watch_peak_refresh",
        r.duration(c.watch_peak_refresh, limits::kMinInterval, limits::kMaxWindow)},
       {"slow_read", r.duration(c.slow_read, nanoseconds(0), limits::kMaxInterval)}});
}

void read_control(Reader r, const YAML::Node& n, const std::string& p, ControlConfig& c) {
  auto socket_mode = [&r, &c](const YAML::Node& v, const std::string& path) {
    r.walk.value(v, path, "an octal mode", c.socket_mode, parse_socket_mode);
  };
  auto socket_group = [&r, &c](const YAML::Node& v, const std::string& path) {
    std::string text;
    if (!r.walk.scalar(v, path, "a group name or GID", text)) return;
    // Looked up in the group database here, so --check-config refuses an unknown group.
    auto gid = text.empty() ? Result<gid_t>(gid_t{0}) : parse_socket_group(text);
    if (gid) {
      c.socket_group = text;
    } else {
      r.walk.error(v, path, gid.error().message);
    }
  };
  auto peers_read = [&r, &c](const YAML::Node& v, const std::string& path) {
    r.walk.value(v, path, "all or own", c.peers_read, parse_peers_read);
  };
  auto tcp = [&r, &c](const YAML::Node& v, const std::string& path) {
    r.walk.fields(v, path,
                  {{"enabled", r.flag(c.tcp.enabled)},
                   {"listen", r.endpoint(c.tcp.listen)},
                   {"token_file", r.text(c.tcp.token_file)}});
  };
  r.walk.fields(
      n, p,
      {{"socket", r.text(c.socket)},
       {"socket_mode", socket_mode},
       {"socket_group", socket_group},
       {"peers_read", peers_read},
       {"max_frame", r.size(c.max_frame_bytes, limits::kMinFrameBytes, limits::kMaxFrameBytes)},
       {"max_connections", r.count(c.max_connections, 1, limits::kMaxConnections)},
       {"max_runs", r.count(c.max_runs, 1, limits::kMaxRuns)},
       {"max_marks_per_run", r.count(c.max_marks_per_run, 1, limits::kMaxMarksPerRun)},
       {"max_requests_per_second",
        r.count(c.max_requests_per_second, 1, limits::kMaxRequestsPerSecond)},
       {"max_unread_output", r.size(c.max_unread_output_bytes, limits::kMinUnreadOutputBytes,
                                    limits::kMaxUnreadOutputBytes)},
       {"unread_output_timeout",
        r.duration(c.unread_output_timeout, limits::kMinInterval, limits::kMaxWindow)},
       {"idle_timeout", r.duration(c.idle_timeout, limits::kMinInterval, limits::kMaxWindow)},
       {"max_connections_per_uid", r.count(c.max_connections_per_uid, 1, limits::kMaxConnections)},
       {"reserved_connections", r.count(c.reserved_connections, 0, limits::kMaxConnections)},
       {"socket_check_interval",
        r.duration(c.socket_check_interval, limits::kMinInterval, limits::kMaxInterval)},
       {"tcp", tcp}});
}

void read_store(Reader r, const YAML::Node& n, const std::string& p, StoreConfig& c) {
  auto max_bytes = [&r, &c](const YAML::Node& v, const std::string& path) {
    r.walk.value(v, path, "a size", c.retention.max_bytes,
                 [](std::string_view t) -> Result<std::uint64_t> {
                   auto bytes = parse_size_in(t, 0, kAnySize);
                   if (bytes.ok() && *bytes != 0 && *bytes < limits::kMinRetentionBytes) {
                     return Error{"'" + std::string(t) +
                                  "' is below the 1 MiB minimum (a smaller cap would delete "
                                  "every finished run); use 0 for no size cap"};
                   }
                   return bytes;
                 });
  };
  auto retention = [&r, &c, max_bytes](const YAML::Node& v, const std::string& path) {
    r.walk.fields(
        v, path,
        {{"max_age_days", r.count(c.retention.max_age_days, 0, limits::kMaxRetentionDays)},
         {"max_runs", r.count(c.retention.max_runs, 0, limits::kMaxRetainedRuns)},
         {"max_bytes", max_bytes}});
  };
  r.walk.fields(
      n, p,
      {{"retention", retention},
       {"journal_max_writes", r.count(c.journal_max_writes, 1, limits::kMaxJournalWrites)},
       {"coalesce_wal_writes", r.flag(c.coalesce_wal_writes)}});
}

void read_growth(Reader r, const YAML::Node& n, const std::string& p, GrowthConfig& c) {
  bool min_bytes_given = false;
  bool runaway_given = false;
  r.walk.fields(n, p,
                {{"min_bytes", Reader::given(r.size(c.min_bytes, 1), min_bytes_given)},
                 {"warmup_rounds", r.count(c.warmup_rounds, 0, limits::kMaxRounds)},
                 {"fit_rounds", r.count(c.fit_rounds, limits::kMinFitRounds, limits::kMaxRounds)},
                 {"min_fit_r2", r.real(c.min_fit_r2, 0, false, 1)},
                 {"settle", r.duration(c.settle, nanoseconds(0), limits::kMaxInterval)},
                 {"runaway_bytes_per_second",
                  Reader::given(r.size(c.runaway_bytes_per_second, 1), runaway_given)},
                 {"runaway_min_duration",
                  r.duration(c.runaway_min_duration, limits::kMinInterval, limits::kMaxWindow)},
                 {"min_model_copies", r.copies(c.min_model_copies)},
                 {"runaway_model_copies_per_second", r.copies(c.runaway_model_copies_per_second)}});
  // A size in bytes wins where the same threshold is also given in model copies.
  if (min_bytes_given) c.min_model_copies = 0;
  if (runaway_given) c.runaway_model_copies_per_second = 0;
}

}  // namespace

void read_config(YamlWalk& walk, const YAML::Node& root, Config& c) {
  Reader r{walk};
  auto section = [&r](auto read, auto& target) {
    return
        [&r, read, &target](const YAML::Node& n, const std::string& p) { read(r, n, p, target); };
  };
  auto watch = [&walk, &c](const YAML::Node& n, const std::string& p) {
    c.watch.clear();
    c.watch_scopes.clear();
    walk.items(n, p, [&](const YAML::Node& item, const std::string& ip) {
      WatchItem w;
      walk.value(item, ip, "a PID, tree:PID or cgroup:PID", w, parse_watch_item);
      if (w.pid <= 0) return;
      c.watch.push_back(w.pid);
      if (w.scope != Scope::kProcess) c.watch_scopes[w.pid] = w.scope;
    });
  };
  auto log = [&walk, &c](const YAML::Node& n, const std::string& p) {
    walk.fields(n, p, {{"level", [&](const YAML::Node& v, const std::string& vp) {
                          walk.value(v, vp, "a log level", c.log_level, parse_log_level);
                        }}});
  };
  walk.fields(
      root, "",
      {{"budget",
        [&](const YAML::Node& n, const std::string& p) {
          c.budget_auto = n.IsScalar() && n.Scalar() == "auto";
          if (c.budget_auto) return;
          walk.value(n, p, "a size or auto", c.budget_bytes,
                     [](std::string_view t) -> Result<std::uint64_t> {
                       auto size = parse_size_in(t, 1, kAnySize);
                       if (!size) return Error{size.error().message + "; or auto"};
                       return size;
                     });
        }},
       {"system_reserve", r.size(c.system_reserve_bytes, 0)},
       {"margin", r.size(c.margin_bytes, 0)},
       {"state_dir", r.text(c.state_dir)},
       {"sampling", section(read_sampling, c.sampling)},
       {"metrics",
        [&](const YAML::Node& n, const std::string& p) {
          walk.fields(
              n, p,
              {{"listen", r.endpoint(c.metrics.listen)},
               {"run_retention",
                r.duration(c.metrics.run_retention, nanoseconds(0), limits::kMaxWindow)},
               {"max_targets", r.count(c.metrics.max_targets, 1, limits::kMaxMetricsTargets)},
               {"max_targets_per_user",
                r.count(c.metrics.max_targets_per_user, 0, limits::kMaxMetricsTargets)},
               {"job_names", [&](const YAML::Node& v, const std::string& vp) {
                  walk.value(v, vp, "plain, hash or omit", c.metrics.job_names, parse_job_names);
                }}});
        }},
       {"control", section(read_control, c.control)},
       {"growth", section(read_growth, c.growth)},
       {"store", section(read_store, c.store)},
       {"release",
        [&](const YAML::Node& n, const std::string& p) {
          bool slack_given = false;
          walk.fields(n, p,
                      {{"slack", Reader::given(r.size(c.release.slack_bytes, 0), slack_given)},
                       {"grace", r.duration(c.release.grace, std::chrono::milliseconds(1),
                                            limits::kMaxWindow)},
                       {"slack_model_copies", r.copies(c.release.slack_model_copies)}});
          if (slack_given) c.release.slack_model_copies = 0;  // bytes win over copies
        }},
       {"headroom",
        [&](const YAML::Node& n, const std::string& p) {
          walk.fields(n, p, {{"warn_fraction", r.real(c.headroom.warn_fraction, 0, false, 1)}});
        }},
       {"admission",
        [&](const YAML::Node& n, const std::string& p) {
          walk.fields(
              n, p,
              {{"lease",
                r.duration(c.admission.lease, std::chrono::milliseconds(1), limits::kMaxWindow)},
               {"use_calibrated", r.flag(c.admission.use_calibrated)},
               {"calibration_factor",
                r.real(c.admission.calibration_factor, limits::kMinCalibrationFactor, true,
                       limits::kMaxCalibrationFactor)},
               {"max_reserved_per_user",
                [&](const YAML::Node& v, const std::string& vp) {
                  // "75%": a share of the budget; a size: bytes; 0: no cap.
                  std::string text;
                  if (!walk.scalar(v, vp, "a size or a percentage of the budget", text)) return;
                  AdmissionConfig& a = c.admission;
                  if (!text.empty() && text.back() == '%') {
                    auto percent = parse_real(std::string_view(text).substr(0, text.size() - 1));
                    if (!percent || *percent < 0 || *percent > 100) {
                      return walk.error(v, vp,
                                        "invalid percentage '" + text + "'; expected 0% to 100%");
                    }
                    a.max_reserved_per_user_fraction = *percent / 100;
                    a.max_reserved_per_user_bytes = 0;
                    return;
                  }
                  auto bytes = parse_size_in(text, 0, kAnySize);
                  if (!bytes) return walk.error(v, vp, bytes.error().message);
                  a.max_reserved_per_user_bytes = *bytes;
                  a.max_reserved_per_user_fraction = 0;
                }},
               {"max_active_runs_per_user",
                r.count(c.admission.max_active_runs_per_user, 0, 1'000'000)},
               {"history",
                [&](const YAML::Node& h, const std::string& hp) {
                  FleetHistoryConfig& f = c.admission.history;
                  walk.fields(
                      h, hp,
                      {{"prometheus_url",
                        [&](const YAML::Node& v, const std::string& vp) {
                          walk.value(v, vp, "an http:// URL", f.prometheus_url,
                                     [](std::string_view t) -> Result<std::string> {
                                       if (t.empty()) return std::string();
                                       auto url = parse_http_url(t);
                                       if (!url) return url.error();
                                       return std::string(t);
                                     });
                        }},
                       {"lookback", r.duration(f.lookback, std::chrono::minutes(1),
                                               std::chrono::hours(24 * 366))},
                       {"timeout", r.duration(f.timeout, std::chrono::milliseconds(10),
                                              std::chrono::seconds(10))},
                       {"cache_ttl", r.duration(f.cache_ttl, nanoseconds(0), limits::kMaxInterval)},
                       {"token_file", r.text(f.token_file)}});
                }},
               {"trusted_uids", [&](const YAML::Node& list, const std::string& lp) {
                  c.admission.trusted_uids.clear();
                  walk.items(list, lp, [&](const YAML::Node& item, const std::string& ip) {
                    if (c.admission.trusted_uids.size() >= 64) {
                      walk.error(item, ip, "at most 64 trusted UIDs");
                      return;
                    }
                    std::optional<std::uint64_t> uid;
                    walk.value(item, ip, "a UID", uid, [](std::string_view t) {
                      return parse_count(t, 0, 0xfffffffeu);  // (uid_t)-1: no user
                    });
                    if (uid) {
                      c.admission.trusted_uids.push_back(static_cast<std::uint32_t>(*uid));
                    }
                  });
                }}});
        }},
       {"phase_gaps", [&](const YAML::Node& n,
                          const std::string& p) { read_phase_gaps(walk, n, p, c.phase_gaps); }},
       {"plans",
        [&](const YAML::Node& n, const std::string& p) { read_plans(walk, n, p, c.plans); }},
       {"watch", watch},
       {"log", log}});
}

}  // namespace ramguard
