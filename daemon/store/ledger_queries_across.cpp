// Queries across runs: listings for `ramguard runs` and comparisons, and a job's peak on record
// for calibrated admission estimates.
#include "ramguard/base/verdict_rank.hpp"
#include "store/codec.hpp"
#include "store/ledger_queries.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

Result<std::vector<RunSummary>> LedgerQueries::summaries(const std::string& where_sql,
                                                         const std::vector<std::string>& params,
                                                         std::size_t limit) {
  const char* op = "listing runs";
  // Worst verdict: the order every worst verdict follows (ramguard/base/verdict_rank.hpp), the
  // latest among equals.
  const std::string sql =
      "SELECT " + std::string(kRunSelect) +
      ", (SELECT count(*) FROM marks m WHERE m.run_id = runs.run_id) AS mark_count, "
      "(SELECT v.id FROM verdicts v WHERE v.run_id = runs.run_id ORDER BY " +
      verdict_rank_sql("v") + " DESC, v.kind DESC, v.id DESC LIMIT 1) AS worst_verdict_id, " +
      "(SELECT max(b.round) FROM boundaries b WHERE b.run_id = runs.run_id) AS rounds FROM runs " +
      where_sql + " ORDER BY started_wall_ns DESC, rowid DESC LIMIT ?" +
      std::to_string(params.size() + 1);
  std::vector<std::pair<RunSummary, std::optional<std::int64_t>>> rows;
  Status read = db_.for_each_row(
      sql, op,
      [&](Query& q) {
        for (std::size_t i = 0; i < params.size(); ++i) q.bind(static_cast<int>(i + 1), params[i]);
        // 0 means no limit; SQLite reads a negative LIMIT the same way.
        q.bind(static_cast<int>(params.size() + 1),
               limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
      },
      [&](const Row& row) -> Status {
        auto l = read_run_row(row);
        if (!l) return l.error();
        RunSummary s;
        s.info = std::move(l->info);
        s.state = l->state;
        s.started = l->started;
        s.ended = l->ended;
        s.baseline = l->baseline;
        s.last = l->last;
        s.peak_bytes = l->peak_bytes;
        s.peak_exact = l->peak_exact;
        s.mark_count = static_cast<std::size_t>(row.int64("mark_count"));
        std::optional<std::int64_t> worst;
        if (!row.is_null("worst_verdict_id")) worst = row.int64("worst_verdict_id");
        if (!row.is_null("rounds")) s.rounds = row.uint32("rounds");
        rows.emplace_back(std::move(s), worst);
        return ok_status();
      });
  if (!read) return read.error();
  std::vector<RunSummary> out;
  for (auto& [s, worst] : rows) {
    if (auto st = load_labels(s.info); !st) return st.error();
    if (auto st = load_scope(s.info); !st) return st.error();  // a listing names tree runs too
    if (worst) {
      auto v = load_verdicts(s.info.run_id, worst);
      if (!v) return v.error();
      if (!v->empty()) s.worst_verdict = std::move(v->front());
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<RunSummary>> LedgerQueries::list_runs(std::size_t limit) {
  return summaries("", {}, limit);
}

Result<std::vector<RunSummary>> LedgerQueries::find_runs_by_labels(
    const std::map<std::string, std::string>& labels, std::size_t limit) {
  if (labels.empty()) return summaries("", {}, limit);
  std::string where = "WHERE run_id IN (";
  std::vector<std::string> params;
  for (const auto& [key, value] : labels) {
    if (!params.empty()) where += " INTERSECT ";
    where += "SELECT run_id FROM run_labels WHERE key = ?" + std::to_string(params.size() + 1) +
             " AND value = ?" + std::to_string(params.size() + 2);
    params.push_back(key);
    params.push_back(value);
  }
  where += ")";
  return summaries(where, params, limit);
}

Result<std::optional<JobPeak>> LedgerQueries::job_peak_on_record(
    const std::string& job, std::size_t recent_runs, const std::vector<std::uint32_t>& owners) {
  const bool cacheable = recent_runs == kRecentRunsForPeak;
  // The cache key: the job and whose runs count ("vit\x1f0,1000").
  std::string key = job + '\x1f';
  std::string in_owners;
  for (std::size_t i = 0; i < owners.size(); ++i) {
    key += (i == 0 ? "" : ",") + std::to_string(owners[i]);
    in_owners += (i == 0 ? "?" : ", ?") + std::to_string(i + 3);
  }
  if (cacheable) {
    if (auto it = job_peaks_.find(key); it != job_peaks_.end()) return it->second;
  }
  constexpr std::string_view kColumns =
      "run_id, peak_bytes, peak_exact, estimate_bytes, plan, ended_mono_ns, ended_wall_ns";
  std::optional<JobPeak> peak;
  Status read = db_.for_each_row(
      "SELECT " + std::string(kColumns) + " FROM (SELECT " + std::string(kColumns) +
          " FROM runs WHERE job = ?1 AND state = 'ended' AND peak_bytes > 0" +
          (owners.empty() ? std::string() : " AND owner_uid IN (" + in_owners + ")") +
          " ORDER BY ended_wall_ns DESC, rowid DESC LIMIT ?2) "
          "ORDER BY peak_bytes DESC, ended_wall_ns DESC LIMIT 1",
      "looking up the peak on record of job '" + job + "'",
      [&](Query& q) {
        q.bind(1, job).bind(2, static_cast<std::int64_t>(recent_runs));
        for (std::size_t i = 0; i < owners.size(); ++i) {
          q.bind(static_cast<int>(i + 3), owners[i]);
        }
      },
      [&](const Row& row) {
        JobPeak p;
        p.run_id = row.text("run_id");
        p.peak_bytes = row.uint64("peak_bytes");
        p.peak_exact = row.flag("peak_exact");
        p.estimate_bytes = row.uint64("estimate_bytes");
        p.plan = row.text("plan");
        p.ended = read_instant(row, {"ended_mono_ns", "ended_wall_ns"});
        peak = std::move(p);
      });
  if (!read) return read.error();
  if (cacheable) {
    if (job_peaks_.size() >= kMaxCachedJobPeaks) job_peaks_.clear();  // many jobs: start over
    job_peaks_.emplace(std::move(key), peak);
  }
  return peak;
}

Result<std::vector<JobFacts>> LedgerQueries::job_facts(std::size_t limit) {
  std::vector<JobFacts> out;
  Status read = db_.for_each_row(
      "SELECT job, owner_uid, MAX(peak_bytes) AS peak_bytes, COUNT(*) AS runs FROM runs "
      "WHERE state = 'ended' AND peak_bytes > 0 GROUP BY job, owner_uid "
      "ORDER BY MAX(ended_wall_ns) DESC LIMIT ?1",
      "summing up the jobs' ended runs",
      [&](Query& q) { q.bind(1, static_cast<std::int64_t>(limit)); },
      [&](const Row& row) {
        out.push_back(JobFacts{row.text("job"), row.uint32("owner_uid"), row.uint64("peak_bytes"),
                               row.uint64("runs")});
      });
  if (!read) return read.error();
  return out;
}

}  // namespace ramguard
