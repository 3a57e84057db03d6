#include "store/ledger_salvage_pages.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/schema.hpp"
#include "store/sqlite_pages.hpp"

namespace ramguard {
namespace {

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using DbHandle = std::unique_ptr<sqlite3, CloseDb>;

// Reservations first (what admission must know), then runs, then rows that need their run.
constexpr const char* kTableOrder[] = {"reservations",    "runs",    "run_labels", "run_scopes",
                                       "marks",           "phases",  "boundaries", "verdicts",
                                       "verdict_figures", "samples", "censuses",   "census_groups"};

// A ledger table as this build stores it: its columns in record order (a WITHOUT ROWID
// table's key columns first) and what each may hold.
struct Shape {
  struct Column {
    std::string name;
    char type = 'T';  // 'I' integer, 'R' real, 'T' text
    bool not_null = false;
    bool rowid_alias = false;  // INTEGER PRIMARY KEY: NULL in the record, the rowid instead
  };
  std::string name;
  bool without_rowid = false;
  std::vector<Column> columns;
  std::size_t min_columns = 0;  // rows written before later migrations added columns
};

std::vector<std::vector<std::string>> query(sqlite3* db, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return rows;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const auto* t = sqlite3_column_text(stmt, i);
      row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(stmt);
  return rows;
}

// This build's shapes, read from its own schema applied to an in-memory database.
std::map<std::string, Shape> ledger_shapes() {
  std::map<std::string, Shape> out;
  sqlite3* raw = nullptr;
  if (sqlite3_open(":memory:", &raw) != SQLITE_OK) return out;
  DbHandle db(raw);
  std::map<std::string, std::size_t> first_columns;  // the columns of each table at creation
  for (const Migration& m : schema_migrations()) {
    if (sqlite3_exec(raw, std::string(m.sql).c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return {};
    }
    for (const auto& row : query(raw, "SELECT name FROM sqlite_master WHERE type = 'table'")) {
      if (!first_columns.contains(row[0])) {
        first_columns[row[0]] = query(raw, "PRAGMA table_info(\"" + row[0] + "\")").size();
      }
    }
  }
  for (const auto& row : query(raw, "SELECT name, sql FROM sqlite_master WHERE type = 'table'")) {
    Shape shape;
    shape.name = row[0];
    shape.without_rowid = row[1].find("WITHOUT ROWID") != std::string::npos;
    // cid, name, type, notnull, dflt, pk
    const auto info = query(raw, "PRAGMA table_info(\"" + shape.name + "\")");
    std::vector<int> order;
    if (shape.without_rowid) {
      for (const auto& idx : query(raw, "SELECT name FROM pragma_index_list('" + shape.name +
                                            "') WHERE origin = 'pk'")) {
        for (const auto& x : query(raw, "SELECT cid FROM pragma_index_xinfo('" + idx[0] + "')")) {
          order.push_back(std::stoi(x[0]));
        }
      }
    } else {
      for (std::size_t i = 0; i < info.size(); ++i) order.push_back(static_cast<int>(i));
    }
    for (const int cid : order) {
      if (cid < 0 || static_cast<std::size_t>(cid) >= info.size()) continue;
      const auto& c = info[static_cast<std::size_t>(cid)];
      Shape::Column column;
      column.name = c[1];
      column.type = c[2] == "INTEGER" ? 'I' : c[2] == "REAL" ? 'R' : 'T';
      column.not_null = c[3] == "1";
      column.rowid_alias = !shape.without_rowid && c[2] == "INTEGER" && c[5] == "1";
      shape.columns.push_back(column);
    }
    shape.min_columns = shape.without_rowid ? shape.columns.size() : first_columns[shape.name];
    out[shape.name] = std::move(shape);
  }
  return out;
}

bool fits(const Shape& shape, const PageRecord& r) {
  if (r.rowid.has_value() == shape.without_rowid) return false;
  if (r.values.size() < shape.min_columns || r.values.size() > shape.columns.size()) return false;
  for (std::size_t i = 0; i < r.values.size(); ++i) {
    const Shape::Column& c = shape.columns[i];
    const SqlValue& v = r.values[i];
    using K = SqlValue::Kind;
    if (v.kind == K::kNull) {
      if (c.not_null && !c.rowid_alias) return false;
      continue;
    }
    if (c.rowid_alias) return false;
    const bool ok = c.type == 'I'   ? v.kind == K::kInteger
                    : c.type == 'R' ? v.kind == K::kReal || v.kind == K::kInteger
                                    : v.kind == K::kText;
    if (!ok) return false;
  }
  return true;
}

// A run's state ranks how far it got: active comes before every end, never after one. Of two
// copies of a run (a stale page beside the live one), the one further on is kept.
int state_rank(const Shape& runs, const PageRecord& r) {
  for (std::size_t i = 0; i < runs.columns.size() && i < r.values.size(); ++i) {
    if (runs.columns[i].name == "state") return r.values[i].bytes == "active" ? 0 : 1;
  }
  return 0;
}

std::string key_text(const Shape& shape, const PageRecord& r) {
  return shape.columns.empty() || r.values.empty() ? std::string() : r.values[0].bytes;
}

struct Walk {
  std::vector<std::uint32_t> pages;  // read, in tree order
  std::set<std::uint32_t> overflow;
  std::uint32_t bad_pages = 0;  // unreadable (garbled, zeroed) or past the end of the file
  std::uint32_t bad_cells = 0;  // cells that did not decode, or records not of `shape`
};

// Walks a b-tree from `root`, counting what it cannot read; records are not kept (a ledger may
// be a gigabyte): they are read again page by page when stored.
Walk walk_tree(const SqlitePages& file, std::uint32_t root, std::set<std::uint32_t>& seen,
               const Shape* shape) {
  Walk walk;
  std::vector<std::uint32_t> todo{root};
  while (!todo.empty()) {
    const std::uint32_t page = todo.back();
    todo.pop_back();
    if (!seen.insert(page).second) continue;  // a loop, or a page two trees claim
    auto read = file.btree_page(page);
    if (!read) {
      ++walk.bad_pages;
      continue;
    }
    walk.pages.push_back(page);
    walk.bad_cells += read->bad_cells;
    walk.overflow.insert(read->overflow_pages.begin(), read->overflow_pages.end());
    for (auto it = read->children.rbegin(); it != read->children.rend(); ++it) todo.push_back(*it);
    if (shape == nullptr) continue;
    for (const PageRecord& r : read->records) {
      if (!fits(*shape, r)) ++walk.bad_cells;
    }
  }
  return walk;
}

// The one ledger table whose shape `r` fits; nullptr when none or several do.
const Shape* only_fit(const std::map<std::string, Shape>& shapes, const PageRecord& r,
                      bool& ambiguous) {
  const Shape* match = nullptr;
  ambiguous = false;
  for (const auto& [name, shape] : shapes) {
    if (!fits(shape, r)) continue;
    if (match != nullptr) {
      ambiguous = true;
      return nullptr;
    }
    match = &shape;
  }
  return match;
}

void bind(sqlite3_stmt* stmt, int index, const SqlValue& v) {
  switch (v.kind) {
    case SqlValue::Kind::kNull:
      sqlite3_bind_null(stmt, index);
      break;
    case SqlValue::Kind::kInteger:
      sqlite3_bind_int64(stmt, index, v.integer);
      break;
    case SqlValue::Kind::kReal:
      sqlite3_bind_double(stmt, index, v.real);
      break;
    case SqlValue::Kind::kText:
      sqlite3_bind_text(stmt, index, v.bytes.data(), static_cast<int>(v.bytes.size()),
                        SQLITE_TRANSIENT);
      break;
    case SqlValue::Kind::kBlob:
      sqlite3_bind_blob(stmt, index, v.bytes.data(), static_cast<int>(v.bytes.size()),
                        SQLITE_TRANSIENT);
      break;
  }
}

SalvageReport::Table& entry(SalvageReport& report, const std::string& table) {
  for (auto& t : report.tables) {
    if (t.name == table) return t;
  }
  report.tables.push_back({table});
  return report.tables.back();
}

// Writes records of one table; a row the fresh ledger already has (SQL read it) is skipped.
class TableWriter {
 public:
  TableWriter(sqlite3* to, const Shape& shape, SalvageReport::Table& t)
      : to_(to), shape_(shape), t_(t) {}
  ~TableWriter() {
    for (auto& [n, stmt] : statements_) sqlite3_finalize(stmt);
  }
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;

  void write(const PageRecord& r) {
    sqlite3_stmt*& stmt = statements_[r.values.size()];  // by column count
    if (stmt == nullptr) {
      std::string cols, marks;
      for (std::size_t i = 0; i < r.values.size(); ++i) {
        cols += (i ? ", \"" : "\"") + shape_.columns[i].name + "\"";
        marks += i ? ", ?" : "?";
      }
      const std::string sql =
          "INSERT OR IGNORE INTO \"" + shape_.name + "\" (" + cols + ") VALUES (" + marks + ")";
      if (sqlite3_prepare_v2(to_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
        ++t_.refused;
        return;
      }
    }
    for (std::size_t i = 0; i < r.values.size(); ++i) {
      SqlValue v = r.values[i];
      if (shape_.columns[i].rowid_alias && r.rowid) {
        v.kind = SqlValue::Kind::kInteger;
        v.integer = *r.rowid;
      }
      bind(stmt, static_cast<int>(i + 1), v);
    }
    const int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) {
      ++t_.refused;  // e.g. a mark whose run was not recovered
    } else if (sqlite3_changes(to_) > 0) {
      ++t_.recovered;
    }
  }

 private:
  sqlite3* to_;
  const Shape& shape_;
  SalvageReport::Table& t_;
  std::map<std::size_t, sqlite3_stmt*> statements_;
};

// Runs are few (retention keeps at most max_runs) and may have two copies (a stale page beside
// the live one): all are read, the furthest on of each kept, in the order first saved.
std::vector<PageRecord> newest_runs(std::vector<PageRecord> records, const Shape& shape) {
  std::map<std::string, std::size_t> best;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto [it, fresh] = best.emplace(key_text(shape, records[i]), i);
    if (!fresh && state_rank(shape, records[i]) > state_rank(shape, records[it->second])) {
      it->second = i;
    }
  }
  std::vector<PageRecord> out;
  for (const auto& [key, i] : best) out.push_back(std::move(records[i]));
  std::stable_sort(out.begin(), out.end(), [](const PageRecord& a, const PageRecord& b) {
    return a.rowid.value_or(0) < b.rowid.value_or(0);
  });
  return out;
}

// The moved-aside file, mapped read-only: its pages are the page cache's, not the daemon's heap.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* at =
          ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (at != MAP_FAILED) {
        data_ = at;
        size_ = static_cast<std::size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const std::uint8_t> bytes() const {
    return {static_cast<const std::uint8_t*>(data_), size_};
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace

bool recover_pages(const std::filesystem::path& path, sqlite3* to, SalvageReport& report) {
  const MappedFile mapped(path);
  const MappedFile log(path.string() + "-wal");
  const SqlitePages file(mapped.bytes(), log.bytes());
  for (const char* name : kTableOrder) (void)entry(report, name);  // each is reported
  SalvageReport::Pages& found = report.pages;
  found.read = true;
  found.header_sane = file.header_sane();
  found.page_size = file.page_size();
  found.page_count = file.page_count();
  found.wal_pages = file.wal_pages();
  if (file.header_page_count() > file.page_count()) {
    found.missing_pages = file.header_page_count() - file.page_count();
  }
  if (file.page_size() == 0) return true;
  const std::map<std::string, Shape> shapes = ledger_shapes();

  // sqlite_schema (rooted at page 1): where each ledger table's tree starts.
  std::set<std::uint32_t> seen;
  std::set<std::uint32_t> overflow;
  const Walk schema = walk_tree(file, 1, seen, nullptr);
  overflow.insert(schema.overflow.begin(), schema.overflow.end());
  found.tree_pages += static_cast<std::uint32_t>(schema.pages.size());
  std::map<std::string, std::uint32_t> roots;
  std::vector<std::uint32_t> other_roots;  // indexes and anything else: walked to account
  std::size_t foreign_tables = 0;
  for (const std::uint32_t page : schema.pages) {
    const auto read = file.btree_page(page);
    if (!read) continue;  // read once already: cannot happen, the file is not changing
    for (const PageRecord& r : read->records) {
      if (r.values.size() != 5 || r.values[3].kind != SqlValue::Kind::kInteger) continue;
      const std::string& type = r.values[0].bytes;
      const std::string& name = r.values[1].bytes;
      const auto root = static_cast<std::uint32_t>(r.values[3].integer);
      if (type == "table" && shapes.contains(name)) {
        roots[name] = root;
      } else {
        if (type == "table" && !name.starts_with("sqlite_")) ++foreign_tables;
        if (root != 0) other_roots.push_back(root);
      }
    }
  }
  found.schema_read = !roots.empty();
  if (roots.empty() && foreign_tables > 0) {
    report.foreign = true;
    return false;
  }

  std::map<std::string, std::vector<std::uint32_t>> pages_of;  // each table's pages to read
  std::set<std::string> incomplete;
  for (const auto& [name, shape] : shapes) {
    const auto root = roots.find(name);
    if (root == roots.end()) {
      incomplete.insert(name);
      continue;
    }
    Walk walk = walk_tree(file, root->second, seen, &shape);
    overflow.insert(walk.overflow.begin(), walk.overflow.end());
    found.tree_pages += static_cast<std::uint32_t>(walk.pages.size());
    found.bad_pages += walk.bad_pages;
    found.bad_cells += walk.bad_cells;
    if (walk.bad_pages > 0 || walk.bad_cells > 0) incomplete.insert(name);
    pages_of[name] = std::move(walk.pages);
  }
  for (const std::uint32_t root : other_roots) {
    const Walk walk = walk_tree(file, root, seen, nullptr);  // rebuilt: only accounted
    overflow.insert(walk.overflow.begin(), walk.overflow.end());
    found.tree_pages += static_cast<std::uint32_t>(walk.pages.size());
  }
  const std::set<std::uint32_t> free = file.freelist();
  found.free_pages = static_cast<std::uint32_t>(free.size());
  found.overflow_pages = static_cast<std::uint32_t>(overflow.size());

  // The pages no tree reached: parts of a damaged tree, or (the freelist unknown) free pages.
  // Only tables whose own tree was damaged take their records: a whole tree lost none to them.
  std::map<std::string, std::vector<std::uint32_t>> orphans_of;
  for (std::uint32_t page = 2; page <= file.page_count(); ++page) {
    if (seen.contains(page) || free.contains(page) || overflow.contains(page)) continue;
    const auto read = file.btree_page(page);
    if (!read) {
      ++found.unaccounted_pages;
      continue;
    }
    ++found.orphan_pages;
    std::set<std::string> takers;
    for (const PageRecord& r : read->records) {
      bool ambiguous = false;
      const Shape* match = only_fit(shapes, r, ambiguous);
      if (ambiguous) ++found.ambiguous_records;
      if (match != nullptr && incomplete.contains(match->name)) takers.insert(match->name);
    }
    for (const std::string& name : takers) orphans_of[name].push_back(page);
  }

  for (const char* name : kTableOrder) {
    const auto shape = shapes.find(name);
    if (shape == shapes.end()) continue;
    SalvageReport::Table& t = entry(report, name);
    TableWriter writer(to, shape->second, t);
    std::vector<PageRecord> runs;
    auto take = [&](const std::vector<std::uint32_t>& pages, bool orphan) {
      for (const std::uint32_t page : pages) {
        auto read = file.btree_page(page);
        if (!read) continue;
        for (PageRecord& r : read->records) {
          bool ambiguous = false;
          if (orphan ? only_fit(shapes, r, ambiguous) != &shape->second : !fits(shape->second, r)) {
            continue;
          }
          if (shape->first == "runs") {
            runs.push_back(std::move(r));
          } else {
            writer.write(r);
          }
        }
      }
    };
    take(pages_of[name], false);
    take(orphans_of[name], true);
    for (const PageRecord& r : newest_runs(std::move(runs), shape->second)) writer.write(r);
    // Every page of its tree was read: the table is whole, whatever SQL made of it.
    if (!incomplete.contains(name)) t.complete = true;
  }
  return true;
}

}  // namespace ramguard
