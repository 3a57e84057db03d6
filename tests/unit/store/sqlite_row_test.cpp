// Rows read by column name (SqliteDb::for_each_row and Row): the order a table or a SELECT
// lists its columns in does not matter, and a name the query lacks is an error naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "store/sqlite_db.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::unique_ptr<SqliteDb> open_db(const std::filesystem::path& file, std::string_view create_sql) {
  auto db = SqliteDb::open(file);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  if (!db) return nullptr;
  EXPECT_TRUE((*db)->exec(create_sql, "creating the table").ok());
  return std::move(*db);
}

struct Item {
  std::int64_t id = 0;
  std::string name;
  double weight = 0;
  bool has_weight = false;
};

// The one reader of `items` the tests share: by name, in an order of its own.
Result<std::vector<Item>> read_items(SqliteDb& db, std::string_view sql) {
  std::vector<Item> out;
  Status s = db.for_each_row(
      sql, "reading the items", [](Query&) {},
      [&](const Row& row) {
        Item item;
        item.name = row.text("name");
        item.has_weight = !row.is_null("weight");
        item.weight = row.real("weight");
        item.id = row.int64("id");
        out.push_back(std::move(item));
      });
  if (!s) return s.error();
  return out;
}

TEST(SqliteRow, ReadsColumnsByNameWhateverTheirPosition) {
  TempDir dir;
  // The same rows in two tables whose columns are in different orders.
  auto db = open_db(dir.path() / "x.db",
                    "CREATE TABLE a (id INTEGER, name TEXT, weight REAL);"
                    "CREATE TABLE b (weight REAL, extra TEXT, id INTEGER, name TEXT);"
                    "INSERT INTO a VALUES (1, 'one', 1.5), (2, 'two', NULL);"
                    "INSERT INTO b VALUES (1.5, 'x', 1, 'one'), (NULL, 'y', 2, 'two');");
  ASSERT_TRUE(db);
  for (const char* sql : {"SELECT id, name, weight FROM a ORDER BY id",
                          "SELECT weight, extra, id, name FROM b ORDER BY id",
                          "SELECT name, id, weight FROM b ORDER BY id"}) {
    SCOPED_TRACE(sql);
    auto items = read_items(*db, sql);
    ASSERT_TRUE(items.ok()) << items.error().message;
    ASSERT_EQ(items->size(), 2u);
    EXPECT_EQ((*items)[0].id, 1);
    EXPECT_EQ((*items)[0].name, "one");
    EXPECT_TRUE((*items)[0].has_weight);
    EXPECT_EQ((*items)[0].weight, 1.5);
    EXPECT_EQ((*items)[1].id, 2);
    EXPECT_EQ((*items)[1].name, "two");
    EXPECT_FALSE((*items)[1].has_weight);
  }
}

TEST(SqliteRow, ARenamedColumnIsFoundByItsNewName) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db",
                    "CREATE TABLE t (label TEXT, n INTEGER, w REAL);"
                    "INSERT INTO t VALUES ('one', 1, 2.5);");
  ASSERT_TRUE(db);
  auto items = read_items(*db, "SELECT w AS weight, label AS name, n AS id FROM t");
  ASSERT_TRUE(items.ok()) << items.error().message;
  ASSERT_EQ(items->size(), 1u);
  EXPECT_EQ((*items)[0].id, 1);
  EXPECT_EQ((*items)[0].name, "one");
  EXPECT_EQ((*items)[0].weight, 2.5);
}

TEST(SqliteRow, ReadsOutOfTheirUsualOrderStillFindTheirColumn) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db",
                    "CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER);"
                    "INSERT INTO t VALUES (1, 2, 3), (4, 5, 6), (7, 8, 9);");
  ASSERT_TRUE(db);
  // Each row reads a different subset in a different order from the same statement, some
  // columns twice.
  std::vector<std::int64_t> seen;
  int row_number = 0;
  static constexpr ColumnName kEven[] = {"c", "a", "b", "c", "a"};
  static constexpr ColumnName kOdd[] = {"b", "b"};
  const auto read = [&](const Row& row) {
    if (row_number++ % 2 == 0) {
      for (ColumnName c : kEven) seen.push_back(row.int64(c));
    } else {
      for (ColumnName c : kOdd) seen.push_back(row.int64(c));
    }
  };
  ASSERT_TRUE(db->for_each_row(
                    "SELECT a, b, c FROM t ORDER BY a", "t", [](Query&) {}, read)
                  .ok());
  EXPECT_EQ(seen, (std::vector<std::int64_t>{3, 1, 2, 3, 1, 5, 5, 9, 7, 8, 9, 7}));
}

TEST(SqliteRow, AMissingColumnIsAnErrorNamingIt) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db",
                    "CREATE TABLE t (id INTEGER, name TEXT);"
                    "INSERT INTO t VALUES (1, 'one'), (2, 'two');");
  ASSERT_TRUE(db);
  auto items = read_items(*db, "SELECT id, name FROM t");
  ASSERT_FALSE(items.ok());
  EXPECT_THAT(items.error().message, HasSubstr("reading the items"));
  EXPECT_THAT(items.error().message, HasSubstr("no column 'weight'"));
}

TEST(SqliteRow, AnErrorFromTheReaderStopsTheRead) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db",
                    "CREATE TABLE t (id INTEGER);"
                    "INSERT INTO t VALUES (1), (2), (3);");
  ASSERT_TRUE(db);
  int rows = 0;
  Status s = db->for_each_row(
      "SELECT id FROM t WHERE id >= ?1 ORDER BY id", "t", [](Query& q) { q.bind(1, 2); },
      [&](const Row& row) -> Status {
        ++rows;
        if (row.int64("id") == 2) return Error{"stop at 2"};
        return ok_status();
      });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "stop at 2");
  EXPECT_EQ(rows, 1);
}

}  // namespace
}  // namespace ramguard
