#include "store/schema.hpp"

#include <array>
#include <cstdio>
#include <string>

namespace ramguard {
namespace {

// Instants are stored twice: *_wall_ns (nanoseconds since the Unix epoch, for humans, ordering
// and anything across a reboot) and *_mono_ns (CLOCK_MONOTONIC nanoseconds, for intervals; valid
// only within one boot of the machine). Readings are 9 columns with a common prefix; unsigned
// 64-bit values are stored as their int64 bit pattern. Upserted tables keep their rowid, so
// "ORDER BY rowid" is the order in which records were first saved.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY NOT NULL,
  job TEXT NOT NULL,
  target_pid INTEGER NOT NULL,
  target_start_ticks INTEGER NOT NULL,
  owner_uid INTEGER NOT NULL,
  model_bytes INTEGER NOT NULL,
  declared_rounds INTEGER NOT NULL,
  hosts INTEGER NOT NULL,
  estimate_bytes INTEGER NOT NULL,
  plan TEXT NOT NULL,
  reservation_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('active', 'ended', 'exited', 'lost')),
  started_mono_ns INTEGER NOT NULL,
  started_wall_ns INTEGER NOT NULL,
  ended_mono_ns INTEGER,
  ended_wall_ns INTEGER,
  peak_bytes INTEGER NOT NULL,
  peak_exact INTEGER NOT NULL,
  base_mono_ns INTEGER NOT NULL, base_wall_ns INTEGER NOT NULL, base_source TEXT NOT NULL,
  base_rss INTEGER NOT NULL, base_anon INTEGER NOT NULL, base_file INTEGER NOT NULL,
  base_shmem INTEGER NOT NULL, base_swap INTEGER NOT NULL, base_hwm INTEGER NOT NULL,
  last_mono_ns INTEGER NOT NULL, last_wall_ns INTEGER NOT NULL, last_source TEXT NOT NULL,
  last_rss INTEGER NOT NULL, last_anon INTEGER NOT NULL, last_file INTEGER NOT NULL,
  last_shmem INTEGER NOT NULL, last_swap INTEGER NOT NULL, last_hwm INTEGER NOT NULL
);
CREATE INDEX runs_by_start ON runs (started_wall_ns);
CREATE INDEX runs_by_state ON runs (state);
CREATE INDEX runs_by_job ON runs (job, state, ended_wall_ns);

CREATE TABLE run_labels (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX labels_by_pair ON run_labels (key, value);

CREATE TABLE marks (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  phase TEXT NOT NULL,
  round INTEGER NOT NULL,
  r_mono_ns INTEGER NOT NULL, r_wall_ns INTEGER NOT NULL, r_source TEXT NOT NULL,
  r_rss INTEGER NOT NULL, r_anon INTEGER NOT NULL, r_file INTEGER NOT NULL,
  r_shmem INTEGER NOT NULL, r_swap INTEGER NOT NULL, r_hwm INTEGER NOT NULL,
  alloc_allocated INTEGER, alloc_active INTEGER, alloc_resident INTEGER, alloc_retained INTEGER,
  gc_rss_before INTEGER, gc_rss_after INTEGER, gc_collected INTEGER, gc_duration_s REAL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE phases (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  phase TEXT NOT NULL,
  round INTEGER NOT NULL,
  begin_mono_ns INTEGER NOT NULL,
  begin_wall_ns INTEGER NOT NULL,
  end_mono_ns INTEGER,
  end_wall_ns INTEGER,
  peak_bytes INTEGER NOT NULL,
  peak_exact INTEGER NOT NULL,
  UNIQUE (run_id, phase, round, begin_mono_ns)
);

CREATE TABLE boundaries (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  round INTEGER NOT NULL,
  r_mono_ns INTEGER NOT NULL, r_wall_ns INTEGER NOT NULL, r_source TEXT NOT NULL,
  r_rss INTEGER NOT NULL, r_anon INTEGER NOT NULL, r_file INTEGER NOT NULL,
  r_shmem INTEGER NOT NULL, r_swap INTEGER NOT NULL, r_hwm INTEGER NOT NULL,
  floor_bytes INTEGER NOT NULL,
  settled INTEGER NOT NULL,
  alloc_allocated INTEGER, alloc_active INTEGER, alloc_resident INTEGER, alloc_retained INTEGER,
  gc_rss_before INTEGER, gc_rss_after INTEGER, gc_collected INTEGER, gc_duration_s REAL,
  UNIQUE (run_id, round)
);

CREATE TABLE verdicts (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  severity TEXT NOT NULL,
  passed INTEGER NOT NULL,
  round INTEGER NOT NULL,
  phase TEXT NOT NULL,
  summary TEXT NOT NULL,
  at_mono_ns INTEGER NOT NULL,
  at_wall_ns INTEGER NOT NULL,
  cleared INTEGER NOT NULL,
  UNIQUE (run_id, kind, round, phase, at_mono_ns)
);

-- NaN is stored as NULL (SQLite has no NaN).
CREATE TABLE verdict_figures (
  verdict_id INTEGER NOT NULL REFERENCES verdicts (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL,
  PRIMARY KEY (verdict_id, name)
) WITHOUT ROWID;

CREATE TABLE samples (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  at_unix_ms INTEGER NOT NULL,
  rss INTEGER NOT NULL,
  min_rss INTEGER NOT NULL,
  max_rss INTEGER NOT NULL,
  anon INTEGER NOT NULL,
  file INTEGER NOT NULL,
  PRIMARY KEY (run_id, at_unix_ms)
) WITHOUT ROWID;

-- Not tied to runs by a foreign key: a reservation exists before its run starts.
CREATE TABLE reservations (
  id TEXT PRIMARY KEY NOT NULL,
  job TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  created_wall_ms INTEGER NOT NULL,
  expires_wall_ms INTEGER NOT NULL
);
)sql";

// Reservations have an owner: only that UID (or root) may claim or release them, across
// restarts too. Rows admitted before this version default to root, which fails closed.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE reservations ADD COLUMN owner_uid INTEGER NOT NULL DEFAULT 0;
)sql";

// What a run measures when it is not its process alone (the `cgroup` scope); a run without a
// row here measured its process, as every run before this version did.
constexpr const char* kSchemaV3 = R"sql(
CREATE TABLE run_scopes (
  run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  scope TEXT NOT NULL,
  cgroup_dir TEXT NOT NULL
) WITHOUT ROWID;
)sql";

// Where a reservation's estimate came from: a run claiming it after a restart gets its plan.
// Rows written before this version read as given estimates without a plan.
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE reservations ADD COLUMN source_kind TEXT NOT NULL DEFAULT 'given';
ALTER TABLE reservations ADD COLUMN plan TEXT NOT NULL DEFAULT '';
ALTER TABLE reservations ADD COLUMN calibrated_from TEXT NOT NULL DEFAULT '';
)sql";

// The client's censuses (who holds the large objects), one row per round end (and one for the
// run's end), their largest groups beside them. A side table: nothing else reads it.
constexpr const char* kSchemaV5 = R"sql(
CREATE TABLE censuses (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  round INTEGER NOT NULL,
  at_end INTEGER NOT NULL,
  at_unix_ms INTEGER NOT NULL,
  mode TEXT NOT NULL, partial TEXT NOT NULL, duration_s REAL NOT NULL,
  objects_seen INTEGER NOT NULL, storages INTEGER NOT NULL, host INTEGER NOT NULL,
  gpu INTEGER NOT NULL, pinned INTEGER NOT NULL, shared INTEGER NOT NULL,
  unreachable INTEGER NOT NULL, other_groups INTEGER NOT NULL, other_bytes INTEGER NOT NULL,
  placed_anon INTEGER NOT NULL, placed_file INTEGER NOT NULL, placed_shmem INTEGER NOT NULL,
  placed_device INTEGER NOT NULL, unmapped INTEGER NOT NULL, resident INTEGER,
  files TEXT NOT NULL, placement_error TEXT NOT NULL,
  rss INTEGER NOT NULL, counted INTEGER NOT NULL, allocator_free INTEGER NOT NULL,
  PRIMARY KEY (run_id, round, at_end)
) WITHOUT ROWID;
CREATE TABLE census_groups (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, at_end INTEGER NOT NULL, idx INTEGER NOT NULL,
  holder TEXT NOT NULL, reachable INTEGER NOT NULL, cycle TEXT NOT NULL, kind TEXT NOT NULL,
  bytes INTEGER NOT NULL, gpu INTEGER NOT NULL, storages INTEGER NOT NULL,
  objects INTEGER NOT NULL, dtype TEXT NOT NULL, pinned INTEGER NOT NULL, shared INTEGER NOT NULL,
  PRIMARY KEY (run_id, round, at_end, idx),
  FOREIGN KEY (run_id, round, at_end) REFERENCES censuses (run_id, round, at_end)
    ON DELETE CASCADE
) WITHOUT ROWID;
)sql";

constexpr std::array kMigrations = {
    Migration{"initial ledger schema", kSchemaV1},
    Migration{"reservation owners", kSchemaV2},
    Migration{"run scopes", kSchemaV3},
    Migration{"reservation estimate sources", kSchemaV4},
    Migration{"census summaries", kSchemaV5},
};

std::string hex(std::int64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace

std::span<const Migration> schema_migrations() {
  return kMigrations;
}
std::int64_t current_schema_version() {
  return static_cast<std::int64_t>(kMigrations.size());
}

Status migrate_schema(SqliteDb& db, std::span<const Migration> migrations) {
  const std::string file = db.path().string();
  auto app_id = db.scalar_int64("PRAGMA application_id", "reading the application id");
  if (!app_id) return app_id.error();
  auto version = db.scalar_int64("PRAGMA user_version", "reading the schema version");
  if (!version) return version.error();
  const auto known = static_cast<std::int64_t>(migrations.size());

  if (*app_id != 0 && *app_id != kRamguardApplicationId) {
    return Error{"database file " + file + " is not a ramguard database (application_id " +
                 hex(*app_id) + ", expected " + hex(kRamguardApplicationId) + ")"};
  }
  if (*version > known) {
    return Error{"database file " + file + " has schema version " + std::to_string(*version) +
                 ", newer than this ramguardd understands (" + std::to_string(known) +
                 "): upgrade ramguardd or use another state directory"};
  }
  if (*app_id == 0 && *version == 0) {
    auto tables = db.scalar_int64("SELECT count(*) FROM sqlite_master", "inspecting the database");
    if (!tables) return tables.error();
    if (*tables > 0) {
      return Error{"database file " + file + " is not a ramguard database (it holds " +
                   std::to_string(*tables) + " objects of another application)"};
    }
  }

  for (std::int64_t v = *version; v < known; ++v) {
    const Migration& step = migrations[static_cast<std::size_t>(v)];
    const std::string op = "migrating the schema to version " + std::to_string(v + 1) + " (" +
                           std::string(step.description) + ")";
    Status done = in_transaction(db, op, [&]() -> Status {
      if (auto s = db.exec(step.sql, op); !s) return s;
      // Pragmas cannot take bound parameters; both values are integers we control.
      return db.exec("PRAGMA user_version = " + std::to_string(v + 1) +
                         "; PRAGMA application_id = " + std::to_string(kRamguardApplicationId),
                     op);
    });
    if (!done) return done;
  }
  return ok_status();
}

}  // namespace ramguard
