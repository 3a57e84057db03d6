// Page-level salvage of a damaged ledger against the real store: a ledger written by Store is
// damaged the ways a disk or a person damages files (cut to half, a garbled header, zeroed
// table pages, 0 bytes, another application's database) and salvaged; every row that comes
// back must equal the original's, and what was lost must be said. The page reader itself is
// also fed arbitrary bytes, which it must survive (ASan checks every read).
#include "store/ledger_salvage.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <fstream>
#include <random>
#include <set>

#include "store/sqlite_pages.hpp"
#include "store_fixtures.hpp"

namespace ramguard::testing {
namespace {

constexpr int kRuns = 40;
constexpr int kMarksPerRun = 30;
constexpr int kReservations = 3;
constexpr std::size_t kPageBytes = 4096;

struct Db {
  explicit Db(const std::filesystem::path& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  }
  ~Db() { sqlite3_close(db); }
  std::int64_t integer(const std::string& sql) const {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db);
    std::int64_t out = -1;
    if (sqlite3_step(stmt) == SQLITE_ROW) out = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return out;
  }
  std::vector<std::int64_t> integers(const std::string& sql) const {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
    std::vector<std::int64_t> out;
    while (sqlite3_step(stmt) == SQLITE_ROW) out.push_back(sqlite3_column_int64(stmt, 0));
    sqlite3_finalize(stmt);
    return out;
  }
  void exec(const std::string& sql) const {
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3* db = nullptr;
};

const char* const kTables[] = {"reservations", "runs",       "run_labels",    "marks",
                               "phases",       "boundaries", "verdicts",      "verdict_figures",
                               "samples",      "censuses",   "census_groups", "run_scopes"};

class LedgerSalvage : public ::testing::Test {
 protected:
  // A ledger of kRuns runs (every record type, a long plan that overflows its page) and
  // kReservations reservations, closed (checkpointed); `original_` is an untouched copy.
  void SetUp() override {
    file_ = dir_.path() / Store::kFileName;
    original_ = dir_.path() / "original.db";
    {
      auto store = open_store(dir_.path());
      ASSERT_NE(store, nullptr);
      for (int i = 0; i < kReservations; ++i) {
        Reservation r;
        r.id = "rsv-" + std::to_string(i);
        r.job = "job";
        r.bytes = 1'000'000'000ULL * (i + 1);
        r.run_id = i == 0 ? "run-0" : "";
        r.created_wall_ms = 1000 + i;
        r.expires_wall_ms = 61000 + i;
        ASSERT_TRUE(store->save_reservation(r).ok());
      }
      for (int i = 0; i < kRuns; ++i) {
        RunLedger l = full_ledger("run-" + std::to_string(i));
        l.info.plan = std::string(6000, 'p') + std::to_string(i);  // an overflow chain
        for (int m = 0; m < kMarksPerRun; ++m) {
          l.marks.push_back(mark(10 + m, MarkKind::kPhaseBegin, "load", 2));
        }
        ASSERT_TRUE(store->begin_run(l).ok());
      }
    }
    ASSERT_FALSE(std::filesystem::exists(file_.string() + "-wal"));
    std::filesystem::copy_file(file_, original_);
  }

  std::int64_t original_count(const std::string& table) const {
    return Db(original_).integer("SELECT count(*) FROM " + std::string(table));
  }
  // Leaf pages of a table's b-tree and the entries on pages, as SQLite's dbstat sees them (an
  // index b-tree, as a WITHOUT ROWID table is, holds entries on its interior pages too).
  std::vector<std::int64_t> leaf_pages(const std::string& table) const {
    return Db(original_).integers("SELECT pageno FROM dbstat WHERE name = '" + table +
                                  "' AND pagetype = 'leaf' ORDER BY pageno");
  }
  std::int64_t cells_on(const std::string& table, const std::vector<std::int64_t>& pages) const {
    std::string list;
    for (auto p : pages) list += (list.empty() ? "" : ",") + std::to_string(p);
    return Db(original_).integer("SELECT sum(ncell) FROM dbstat WHERE name = '" + table +
                                 "' AND pageno IN (" + list + ")");
  }
  void zero_pages(const std::vector<std::int64_t>& pages) const {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    const std::string zeros(kPageBytes, '\0');
    for (auto p : pages) {
      f.seekp(static_cast<std::streamoff>((p - 1) * kPageBytes));
      f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    }
  }

  SalvageReport salvage(const std::string& why = "damaged") {
    auto report = salvage_ledger(dir_.path(), why, false, std::chrono::system_clock::now());
    EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.error().message);
    return report.ok() ? *report : SalvageReport{};
  }

  // Every row of the fresh ledger is a row of the original, unchanged (rowids aside).
  void expect_only_original_rows() const {
    Db fresh(file_);
    fresh.exec("ATTACH '" + original_.string() + "' AS original");
    for (const char* t : kTables) {
      EXPECT_EQ(fresh.integer(std::string("SELECT count(*) FROM (SELECT * FROM main.") + t +
                              " EXCEPT SELECT * FROM original." + t + ")"),
                0)
          << t;
    }
  }
  std::int64_t count(const std::string& table) const {
    return Db(file_).integer("SELECT count(*) FROM " + table);
  }

  TempDir dir_;
  std::filesystem::path file_, original_;
};

TEST_F(LedgerSalvage, HalfTruncationKeepsReservationsAndEveryPageBeforeTheCut) {
  const auto size = std::filesystem::file_size(file_);
  const std::uint64_t kept_pages = size / kPageBytes / 2;
  std::filesystem::resize_file(file_, kept_pages * kPageBytes);
  const SalvageReport report = salvage();
  expect_only_original_rows();
  // Reservations live on an early page: all of them, and admission may trust them.
  EXPECT_EQ(count("reservations"), kReservations);
  EXPECT_TRUE(report.table("reservations")->complete);
  EXPECT_GT(report.pages.missing_pages, 0u) << report.summary();
  EXPECT_FALSE(report.lossless()) << report.summary();
  // Every mark whose leaf page survived and whose run survived came back.
  const std::vector<std::int64_t> kept = Db(original_).integers(
      "SELECT pageno FROM dbstat WHERE name = 'marks' AND pageno <= " + std::to_string(kept_pages));
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(count("marks") + static_cast<std::int64_t>(report.table("marks")->refused),
            cells_on("marks", kept))
      << report.summary();
  EXPECT_NE(report.summary().find("missing (cut short)"), std::string::npos);
}

TEST_F(LedgerSalvage, GarbledHeaderLosesNoRowAndProbesThePageSize) {
  {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    std::string garbage(100, '\0');
    std::mt19937 rng(7);
    for (char& c : garbage) c = static_cast<char>(rng());
    f.write(garbage.data(), 100);
  }
  const SalvageReport report = salvage();
  EXPECT_FALSE(report.pages.header_sane);
  EXPECT_EQ(report.pages.page_size, kPageBytes);
  EXPECT_TRUE(report.pages.schema_read);
  for (const char* t : kTables) EXPECT_EQ(count(t), original_count(t)) << t;
  expect_only_original_rows();
  // SQL could read nothing: every row came from the pages.
  EXPECT_EQ(report.table("runs")->recovered, static_cast<std::uint64_t>(kRuns));
  EXPECT_TRUE(report.lossless()) << report.summary();
  EXPECT_TRUE(report.reservations_known());
}

TEST_F(LedgerSalvage, ZeroedMarkPagesCostTheirRowsOnly) {
  const std::vector<std::int64_t> leaves = leaf_pages("marks");
  ASSERT_GE(leaves.size(), 6u);
  const std::vector<std::int64_t> zeroed = {leaves[2], leaves[4]};
  zero_pages(zeroed);
  const SalvageReport report = salvage();
  expect_only_original_rows();
  EXPECT_EQ(count("runs"), kRuns);
  EXPECT_EQ(count("reservations"), kReservations);
  EXPECT_EQ(count("marks"), original_count("marks") - cells_on("marks", zeroed))
      << report.summary();
  EXPECT_FALSE(report.table("marks")->complete);
  EXPECT_FALSE(report.lossless());
  EXPECT_TRUE(report.reservations_known()) << report.summary();
}

TEST_F(LedgerSalvage, ZeroedRunPagesAreSaidAndAdmissionIsToldRunsAreNotKnown) {
  const std::vector<std::int64_t> leaves = leaf_pages("runs");
  ASSERT_GE(leaves.size(), 3u);
  zero_pages({leaves[1]});
  const std::int64_t lost = cells_on("runs", {leaves[1]});
  const SalvageReport report = salvage();
  expect_only_original_rows();
  EXPECT_EQ(count("runs"), kRuns - lost);
  // The lost runs' marks are refused, not stored dangling.
  EXPECT_EQ(report.table("marks")->refused, static_cast<std::uint64_t>(lost * (kMarksPerRun + 4)))
      << report.summary();
  EXPECT_FALSE(report.reservations_known());
  EXPECT_NE(report.unknown_text().find("runs"), std::string::npos) << report.unknown_text();
}

TEST_F(LedgerSalvage, GarbledHeaderAndZeroedSchemaMatchRecordsByShape) {
  {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    const std::string zeros(kPageBytes, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));  // page 1 and header
  }
  const SalvageReport report = salvage();
  EXPECT_FALSE(report.pages.schema_read);
  expect_only_original_rows();
  EXPECT_EQ(count("reservations"), kReservations);
  EXPECT_EQ(count("runs"), kRuns);
  EXPECT_EQ(count("marks"), original_count("marks"));
  EXPECT_EQ(count("samples"), original_count("samples"));
  // Labels and scopes have one shape (three texts): not guessed, and said.
  EXPECT_GT(report.pages.ambiguous_records, 0u);
  EXPECT_FALSE(report.lossless());
  EXPECT_FALSE(report.reservations_known()) << "a table's completeness needs its tree";
}

// A crash leaves the newest commits in the write-ahead log: read page by page, they are there.
TEST_F(LedgerSalvage, TheWriteAheadLogIsReadWithTheGarbledFile) {
  TempDir crashed;
  {
    auto store = open_store(dir_.path());
    ASSERT_NE(store, nullptr);
    Reservation r;
    r.id = "rsv-wal";
    r.job = "job";
    r.bytes = 7'000'000'000;
    ASSERT_TRUE(store->save_reservation(r).ok());
    ASSERT_TRUE(store->begin_run(full_ledger("run-wal")).ok());
    // Copied while the store is open, as a crash would leave them.
    for (const char* suffix : {"", "-wal"}) {
      std::filesystem::copy_file(file_.string() + suffix,
                                 (crashed.path() / Store::kFileName).string() + suffix);
    }
  }
  const auto file = crashed.path() / Store::kFileName;
  ASSERT_GT(std::filesystem::file_size(file.string() + "-wal"), 0u);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.write("garbled header!!", 16);
  }
  auto report = salvage_ledger(crashed.path(), "damaged", false, std::chrono::system_clock::now());
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_GT(report->pages.wal_pages, 0u) << report->summary();
  Db fresh(file);
  EXPECT_EQ(fresh.integer("SELECT bytes FROM reservations WHERE id = 'rsv-wal'"), 7'000'000'000);
  EXPECT_EQ(fresh.integer("SELECT count(*) FROM runs"), kRuns + 1);
  EXPECT_EQ(fresh.integer("SELECT count(*) FROM marks WHERE run_id = 'run-wal'"), 4);
  EXPECT_TRUE(report->lossless()) << report->summary();
}

TEST_F(LedgerSalvage, AnEmptyFileIsSaidAndANewLedgerStarts) {
  std::filesystem::resize_file(file_, 0);
  std::optional<SalvageReport> salvaged;
  bool emptied = false;
  auto store = open_or_salvage(dir_.path(), {}, salvaged, &emptied);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_TRUE(emptied);
  EXPECT_FALSE(salvaged.has_value());
  EXPECT_EQ(*(*store)->run_count(), 0u);
}

TEST_F(LedgerSalvage, AnotherApplicationsDatabaseIsMovedAsideNotImported) {
  std::filesystem::remove(file_);
  {
    Db other(file_);
    other.exec(
        "CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, contact INTEGER, body TEXT);"
        "INSERT INTO contacts (name) VALUES ('ada'), ('grace');"
        "INSERT INTO notes (contact, body) VALUES (1, 'hello');");
  }
  std::optional<SalvageReport> salvaged;
  auto store = open_or_salvage(dir_.path(), {}, salvaged);
  ASSERT_TRUE(store.ok()) << store.error().message;
  ASSERT_TRUE(salvaged.has_value());
  EXPECT_TRUE(salvaged->foreign);
  EXPECT_NE(salvaged->summary().find("not a ramguard ledger"), std::string::npos)
      << salvaged->summary();
  EXPECT_EQ(*(*store)->run_count(), 0u);
  EXPECT_EQ(Db(salvaged->moved_to).integer("SELECT count(*) FROM contacts"), 2);
  EXPECT_FALSE(salvaged->reservations_known());
}

TEST_F(LedgerSalvage, AnotherApplicationsDatabaseWithAGarbledHeaderIsNotImportedEither) {
  std::filesystem::remove(file_);
  {
    Db other(file_);
    other.exec("CREATE TABLE t (a TEXT, b INTEGER); INSERT INTO t VALUES ('x', 1);");
  }
  {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    f.write("garbled header!!", 16);
  }
  const SalvageReport report = salvage();
  EXPECT_TRUE(report.foreign) << report.summary();
  EXPECT_EQ(count("runs"), 0);
}

// A damaged file of random bytes changed here and there: salvaged without a crash, and what
// comes back is still only the original's rows.
TEST_F(LedgerSalvage, RandomlyDamagedLedgersNeverYieldForeignRows) {
  const std::vector<std::uint8_t> clean = [&] {
    std::ifstream in(original_, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
  }();
  std::mt19937 rng(42);
  for (int round = 0; round < 4; ++round) {
    std::vector<std::uint8_t> bytes = clean;
    for (int i = 0; i < 200; ++i) bytes[rng() % bytes.size()] = static_cast<std::uint8_t>(rng());
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      if (e.path() != original_) std::filesystem::remove(e.path());
    }
    {
      std::ofstream out(file_, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    }
    const SalvageReport report = salvage();
    EXPECT_LE(count("runs"), kRuns) << report.summary();
  }
}

// ---- the page reader on its own ----

TEST(SqlitePages, ReadsEverySerialTypeAndAnOverflowChainAtEveryPageSize) {
  for (const int page_size : {512, 8192, 65536}) {
    TempDir dir;
    const auto path = dir.path() / "t.db";
    const std::string long_text(3 * page_size + 17, 'x');
    {
      Db db(path);
      db.exec("PRAGMA page_size = " + std::to_string(page_size) +
              "; CREATE TABLE t (a, b, c, d, e, f);"
              "INSERT INTO t VALUES (NULL, 0, 1, -129, 1.5, x'00ff');"
              "INSERT INTO t VALUES (9007199254740993, 70000, -2147483649, 'é', '" +
              long_text + "', 0.0);");
    }
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
    for (const bool garble : {false, true}) {
      if (garble) std::fill(bytes.begin(), bytes.begin() + 100, std::uint8_t{0xA5});
      const SqlitePages pages(bytes);
      EXPECT_EQ(pages.header_sane(), !garble);
      ASSERT_EQ(pages.page_size(), static_cast<std::uint32_t>(page_size)) << garble;
      std::vector<PageRecord> rows;
      for (std::uint32_t p = 2; p <= pages.page_count(); ++p) {
        auto page = pages.btree_page(p);
        if (page && page->kind == PageKind::kTableLeaf) {
          for (auto& r : page->records) rows.push_back(r);
        }
      }
      ASSERT_EQ(rows.size(), 2u) << page_size;
      using K = SqlValue::Kind;
      EXPECT_EQ(rows[0].rowid, 1);
      EXPECT_EQ(rows[0].values[0].kind, K::kNull);
      EXPECT_EQ(rows[0].values[1].integer, 0);
      EXPECT_EQ(rows[0].values[2].integer, 1);
      EXPECT_EQ(rows[0].values[3].integer, -129);
      EXPECT_EQ(rows[0].values[4].real, 1.5);
      EXPECT_EQ(rows[0].values[5].kind, K::kBlob);
      EXPECT_EQ(rows[0].values[5].bytes, std::string("\x00\xff", 2));
      EXPECT_EQ(rows[1].values[0].integer, 9007199254740993);
      EXPECT_EQ(rows[1].values[1].integer, 70000);
      EXPECT_EQ(rows[1].values[2].integer, -2147483649LL);
      EXPECT_EQ(rows[1].values[3].bytes, "é");
      EXPECT_EQ(rows[1].values[4].kind, K::kText);
      EXPECT_EQ(rows[1].values[4].bytes, long_text);
      EXPECT_EQ(rows[1].values[5].real, 0.0);
    }
  }
}

TEST(SqlitePages, ArbitraryBytesNeverReadOutOfBounds) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 300; ++round) {
    const std::size_t sizes[] = {0, 1, 99, 100, 101, 511, 512, 1024, 4096 * 3 + 7, 70000};
    std::vector<std::uint8_t> bytes(sizes[round % std::size(sizes)]);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    if (bytes.size() >= 100 && round % 2 == 0) {
      std::memcpy(bytes.data(), "SQLite format 3", 16);  // a sane-looking header, random rest
      bytes[16] = static_cast<std::uint8_t>(1 << (rng() % 8));
      bytes[17] = 0;
      bytes[21] = 64;
      bytes[22] = 32;
      bytes[23] = 32;
    }
    if (round % 3 == 0) {
      for (std::size_t p = 0; p + 8 < bytes.size(); p += 512) bytes[p] = 13;  // leaf-like pages
    }
    const SqlitePages pages(bytes);
    for (std::uint32_t p = 0; p <= pages.page_count() + 1; ++p) (void)pages.btree_page(p);
    (void)pages.freelist();
    (void)decode_record(bytes);
  }
}

TEST(SqlitePages, RecordsWithBadHeadersAreRefused) {
  EXPECT_FALSE(decode_record(std::vector<std::uint8_t>{}).has_value());
  EXPECT_FALSE(decode_record(std::vector<std::uint8_t>{5, 1}).has_value());     // header past end
  EXPECT_FALSE(decode_record(std::vector<std::uint8_t>{2, 10}).has_value());    // reserved type
  EXPECT_FALSE(decode_record(std::vector<std::uint8_t>{2, 6, 1}).has_value());  // body short
  EXPECT_FALSE(decode_record(std::vector<std::uint8_t>{2, 0x81}).has_value());  // varint cut
  const auto ok = decode_record(std::vector<std::uint8_t>{3, 1, 15, 0xff, 'a'});
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ((*ok)[0].integer, -1);
  EXPECT_EQ((*ok)[1].bytes, "a");
}

}  // namespace
}  // namespace ramguard::testing
