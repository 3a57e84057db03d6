#pragma once
// SQLite's file format read page by page, without SQLite (https://www.sqlite.org/fileformat2.html),
// for the salvage of a ledger SQLite itself refuses (ledger_salvage.hpp): the header when it is
// sane, else the page size found by probing for b-tree pages; b-tree pages, their cells and
// records (varints, serial types, overflow chains); the freelist. The ideas are those of
// SQLite's recovery extension (ext/recover/sqlite3recover.c), in a small reader of our own:
// Debian 12's libsqlite3 has no sqlite3_recover. Every read is bounds-checked: any bytes at
// all give pages, or nothing, never a read outside the buffer.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace ramguard {

// One column of a record: NULL, an integer, a real, text or a blob (kept as bytes).
struct SqlValue {
  enum class Kind { kNull, kInteger, kReal, kText, kBlob };
  Kind kind = Kind::kNull;
  std::int64_t integer = 0;
  double real = 0;
  std::string bytes;  // text or blob
};

// A cell of a table leaf (a row: rowid and record) or of any index page (an entry: a record;
// a WITHOUT ROWID table's rows are index entries, on interior pages too).
struct PageRecord {
  std::uint32_t page = 0;
  std::optional<std::int64_t> rowid;  // table b-trees only
  std::vector<SqlValue> values;
};

enum class PageKind : std::uint8_t {
  kIndexInterior = 2,
  kTableInterior = 5,
  kIndexLeaf = 10,
  kTableLeaf = 13,
};

// One b-tree page as found: its kind, its records (table leaves, index pages), its children
// (interior pages) and the cells that could not be read (a bad varint, a record past the page, a
// broken overflow).
struct BtreePage {
  PageKind kind = PageKind::kTableLeaf;
  std::vector<PageRecord> records;
  std::vector<std::uint32_t> children;  // left children in order, then the right-most
  std::uint32_t bad_cells = 0;
  std::set<std::uint32_t> overflow_pages;  // the overflow chains its cells use
};

class SqlitePages {
 public:
  // `file` (and `wal`, its write-ahead log) must outlive the reader. The log's committed
  // frames whose salts and checksums hold replace the file's pages, as SQLite reads them.
  // Never fails: a file without a sane header and without b-tree pages at any page size has
  // page_size() 0 and no pages.
  explicit SqlitePages(std::span<const std::uint8_t> file, std::span<const std::uint8_t> wal = {});

  bool header_sane() const { return header_sane_; }  // magic, page size, reserved bytes
  std::uint32_t page_size() const { return page_size_; }
  std::uint32_t page_count() const { return page_count_; }  // whole pages present in the file
  // The page count the header records (0 when not sane): more than page_count() when cut short.
  std::uint32_t header_page_count() const { return header_page_count_; }
  std::int64_t application_id() const { return application_id_; }  // 0 when not sane
  std::uint32_t wal_pages() const { return static_cast<std::uint32_t>(wal_.size()); }

  // The b-tree page `number` (1-based), or nullopt when it is not a readable b-tree page.
  std::optional<BtreePage> btree_page(std::uint32_t number) const;
  // Page numbers of the freelist (trunks and leaves) as the header says; empty when not sane.
  std::set<std::uint32_t> freelist() const;

 private:
  std::span<const std::uint8_t> page_bytes(std::uint32_t number) const;
  bool read_header(std::span<const std::uint8_t> header);
  bool probe_page_size();
  bool read_payload(std::span<const std::uint8_t> page, std::size_t at, std::uint64_t payload_size,
                    bool index, std::vector<std::uint8_t>& out,
                    std::set<std::uint32_t>& chain) const;

  std::span<const std::uint8_t> file_;
  std::map<std::uint32_t, std::span<const std::uint8_t>> wal_;  // the newest committed images
  bool header_sane_ = false;
  std::uint32_t page_size_ = 0;
  std::uint32_t usable_size_ = 0;
  std::uint32_t page_count_ = 0;
  std::uint32_t header_page_count_ = 0;
  std::int64_t application_id_ = 0;
};

// Decodes one record (header of serial types, then the body); nullopt when it is malformed.
std::optional<std::vector<SqlValue>> decode_record(std::span<const std::uint8_t> record);

}  // namespace ramguard
