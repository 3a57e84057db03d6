// Queries across runs: listings for `ramguard runs` and comparisons, and a job's peak on record
// for calibrated admission estimates.
#include "ramguard/base/verdict_rank.hpp"
#include "store/codec.hpp"
#include "store/sqlite_db.hpp"
#include "store/store.hpp"

namespace ramguard {

Result<std::vector<RunSummary>> Store::summaries(const std::string& where_sql,
                                                 const std::vector<std::string>& params,
                                                 std::size_t limit) {
  const char* op = "listing runs";
  // Worst verdict: the order every worst verdict follows (ramguard/base/verdict_rank.hpp), the
  // latest among equals.
  const std::string sql =
      "SELECT runs.*, (SELECT count(*) FROM marks m WHERE m.run_id = runs.run_id), "
      "(SELECT v.id FROM verdicts v WHERE v.run_id = runs.run_id ORDER BY " +
      verdict_rank_sql("v") + " DESC, v.kind DESC, v.id DESC LIMIT 1), " +
      "(SELECT max(b.round) FROM boundaries b WHERE b.run_id = runs.run_id) FROM runs " +
      where_sql + " ORDER BY started_wall_ns DESC, rowid DESC LIMIT ?" +
      std::to_string(params.size() + 1);
  std::vector<std::pair<RunSummary, std::optional<std::int64_t>>> rows;
  {
    auto q = db_->query(sql, op);
    if (!q) return q.error();
    for (std::size_t i = 0; i < params.size(); ++i) q->bind(static_cast<int>(i + 1), params[i]);
    // 0 means no limit; SQLite reads a negative LIMIT the same way.
    q->bind(static_cast<int>(params.size() + 1),
            limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
    for (;;) {
      auto row = q->step();
      if (!row) return row.error();
      if (!*row) break;
      auto l = read_run_row(*q);
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
      s.mark_count = static_cast<std::size_t>(q->int64(36));
      std::optional<std::int64_t> worst;
      if (!q->is_null(37)) worst = q->int64(37);
      if (!q->is_null(38)) s.rounds = static_cast<std::uint32_t>(q->int64(38));
      rows.emplace_back(std::move(s), worst);
    }
  }
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

Result<std::vector<RunSummary>> Store::list_runs(std::size_t limit) {
  return summaries("", {}, limit);
}

Result<std::vector<RunSummary>> Store::find_runs_by_labels(
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

Result<std::optional<JobPeak>> Store::job_peak_on_record(const std::string& job,
                                                         std::size_t recent_runs,
                                                         const std::vector<std::uint32_t>& owners) {
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
  auto q = db_->query(
      "SELECT run_id, peak_bytes, peak_exact, estimate_bytes, plan, ended_mono_ns, ended_wall_ns "
      "FROM (SELECT * FROM runs WHERE job = ?1 AND state = 'ended' AND peak_bytes > 0" +
          (owners.empty() ? std::string() : " AND owner_uid IN (" + in_owners + ")") +
          " ORDER BY ended_wall_ns DESC, rowid DESC LIMIT ?2) "
          "ORDER BY peak_bytes DESC, ended_wall_ns DESC LIMIT 1",
      "looking up the peak on record of job '" + job + "'");
  if (!q) return q.error();
  q->bind(1, job).bind(2, static_cast<std::int64_t>(recent_runs));
  for (std::size_t i = 0; i < owners.size(); ++i) {
    q->bind(static_cast<int>(i + 3), owners[i]);
  }
  auto row = q->step();
  if (!row) return row.error();
  std::optional<JobPeak> peak;
  if (*row) {
    JobPeak p;
    p.run_id = q->text(0);
    p.peak_bytes = q->uint64(1);
    p.peak_exact = q->int64(2) != 0;
    p.estimate_bytes = q->uint64(3);
    p.plan = q->text(4);
    p.ended = read_instant(*q, 5);
    peak = std::move(p);
  }
  if (cacheable) {
    if (job_peaks_.size() >= kMaxCachedJobPeaks) job_peaks_.clear();  // many jobs: start over
    job_peaks_.emplace(std::move(key), peak);
  }
  return peak;
}

Result<std::vector<JobFacts>> Store::job_facts(std::size_t limit) {
  auto q = db_->query(
      "SELECT job, owner_uid, MAX(peak_bytes), COUNT(*) FROM runs "
      "WHERE state = 'ended' AND peak_bytes > 0 GROUP BY job, owner_uid "
      "ORDER BY MAX(ended_wall_ns) DESC LIMIT ?1",
      "summing up the jobs' ended runs");
  if (!q) return q.error();
  q->bind(1, static_cast<std::int64_t>(limit));
  std::vector<JobFacts> out;
  while (true) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(
        JobFacts{q->text(0), static_cast<std::uint32_t>(q->int64(1)), q->uint64(2), q->uint64(3)});
  }
  return out;
}

}  // namespace ramguard
