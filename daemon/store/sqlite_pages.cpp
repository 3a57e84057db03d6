#include "store/sqlite_pages.hpp"

#include <bit>
#include <cstring>

namespace ramguard {
namespace {

constexpr std::size_t kHeaderBytes = 100;
// A record larger than this is taken for garbage (the ledger's largest are a few KiB).
constexpr std::uint64_t kMaxPayloadBytes = 64ULL << 20;

std::uint32_t be16(std::span<const std::uint8_t> b, std::size_t at) {
  return (std::uint32_t{b[at]} << 8) | b[at + 1];
}
std::uint32_t be32(std::span<const std::uint8_t> b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) |
         (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

// SQLite's varint: up to 8 bytes of 7 bits (high bit: more follows), a 9th of 8 bits.
bool read_varint(std::span<const std::uint8_t> b, std::size_t& at, std::uint64_t& out) {
  out = 0;
  for (int i = 0; i < 9; ++i) {
    if (at >= b.size()) return false;
    const std::uint8_t byte = b[at++];
    if (i == 8) {
      out = (out << 8) | byte;
      return true;
    }
    out = (out << 7) | (byte & 0x7f);
    if ((byte & 0x80) == 0) return true;
  }
  return true;
}

bool is_btree_kind(std::uint8_t kind) {
  return kind == 2 || kind == 5 || kind == 10 || kind == 13;
}
bool is_interior(std::uint8_t kind) {
  return kind == 2 || kind == 5;
}

// A b-tree page header whose cell pointers all land inside the page, after the pointer array.
bool plausible_btree(std::span<const std::uint8_t> page, std::size_t header_at,
                     std::uint32_t usable) {
  if (header_at + 12 > usable || usable > page.size()) return false;
  const std::uint8_t kind = page[header_at];
  if (!is_btree_kind(kind)) return false;
  const std::size_t header = is_interior(kind) ? 12 : 8;
  const std::uint32_t cells = be16(page, header_at + 3);
  const std::size_t pointers_end = header_at + header + 2 * std::size_t{cells};
  if (pointers_end > usable) return false;
  std::uint32_t content = be16(page, header_at + 5);
  if (content == 0) content = 65536;
  if (cells > 0 && (content < pointers_end || content > usable)) return false;
  if (page[header_at + 7] > 60) return false;  // fragmented bytes: SQLite keeps them at most 60
  for (std::uint32_t i = 0; i < cells; ++i) {
    const std::uint32_t at = be16(page, header_at + header + 2 * i);
    if (at < pointers_end || at < content || at >= usable) return false;
  }
  return true;
}

bool valid_page_size(std::uint32_t size) {
  return size >= 512 && size <= 65536 && std::has_single_bit(size);
}

}  // namespace

std::optional<std::vector<SqlValue>> decode_record(std::span<const std::uint8_t> record) {
  std::size_t at = 0;
  std::uint64_t header_size = 0;
  if (!read_varint(record, at, header_size)) return std::nullopt;
  if (header_size < at || header_size > record.size()) return std::nullopt;
  std::vector<std::uint64_t> types;
  while (at < header_size) {
    std::uint64_t type = 0;
    const std::size_t before = at;
    if (!read_varint(record, at, type) || at > header_size) return std::nullopt;
    if (type == 10 || type == 11 || at == before) return std::nullopt;
    types.push_back(type);
  }
  std::vector<SqlValue> out;
  out.reserve(types.size());
  std::size_t body = header_size;
  for (const std::uint64_t type : types) {
    SqlValue v;
    std::uint64_t size = 0;
    static constexpr std::uint8_t kIntSizes[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
    if (type < 10) {
      size = kIntSizes[type];
    } else {
      size = (type - 12 - (type & 1)) / 2;
    }
    if (size > record.size() - body) return std::nullopt;
    const std::span<const std::uint8_t> field = record.subspan(body, size);
    if (type == 0) {
      v.kind = SqlValue::Kind::kNull;
    } else if (type <= 6) {
      v.kind = SqlValue::Kind::kInteger;
      std::uint64_t bits = (field[0] & 0x80) ? ~std::uint64_t{0} : 0;  // sign extension
      for (const std::uint8_t byte : field) bits = (bits << 8) | byte;
      v.integer = static_cast<std::int64_t>(bits);
    } else if (type == 7) {
      v.kind = SqlValue::Kind::kReal;
      std::uint64_t bits = 0;
      for (const std::uint8_t byte : field) bits = (bits << 8) | byte;
      std::memcpy(&v.real, &bits, sizeof v.real);
    } else if (type == 8 || type == 9) {
      v.kind = SqlValue::Kind::kInteger;
      v.integer = type == 9 ? 1 : 0;
    } else {
      v.kind = (type & 1) ? SqlValue::Kind::kText : SqlValue::Kind::kBlob;
      v.bytes.assign(field.begin(), field.end());
    }
    body += size;
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

// The write-ahead log's checksum (fileformat2 4.4): over 32-bit words, big-endian when the
// magic's low bit is set, in pairs.
void wal_checksum(std::span<const std::uint8_t> data, bool big, std::uint32_t& s0,
                  std::uint32_t& s1) {
  auto word = [&](std::size_t at) {
    return big ? be32(data, at)
               : (std::uint32_t{data[at + 3]} << 24) | (std::uint32_t{data[at + 2]} << 16) |
                     (std::uint32_t{data[at + 1]} << 8) | data[at];
  };
  for (std::size_t at = 0; at + 8 <= data.size(); at += 8) {
    s0 += word(at) + s1;
    s1 += word(at + 4) + s0;
  }
}

struct WalImage {
  std::uint32_t page_size = 0;
  std::uint32_t db_pages = 0;  // the database's size at the last commit
  std::map<std::uint32_t, std::span<const std::uint8_t>> pages;
};

// The pages of the log's committed transactions: frames are read while their salts match the
// header's and the checksum chain holds; those after the last commit frame are not committed.
WalImage read_wal(std::span<const std::uint8_t> wal) {
  WalImage out;
  constexpr std::size_t kWalHeader = 32, kFrameHeader = 24;
  if (wal.size() < kWalHeader) return out;
  const std::uint32_t magic = be32(wal, 0);
  if (magic != 0x377f0682 && magic != 0x377f0683) return out;
  const bool big = (magic & 1) != 0;
  const std::uint32_t size = be32(wal, 8);
  if (!valid_page_size(size)) return out;
  std::uint32_t s0 = 0, s1 = 0;
  wal_checksum(wal.first(24), big, s0, s1);
  if (s0 != be32(wal, 24) || s1 != be32(wal, 28)) return out;
  const std::uint32_t salt1 = be32(wal, 16), salt2 = be32(wal, 20);
  std::map<std::uint32_t, std::span<const std::uint8_t>> pending;
  for (std::size_t at = kWalHeader; at + kFrameHeader + size <= wal.size();
       at += kFrameHeader + size) {
    const std::span<const std::uint8_t> frame = wal.subspan(at, kFrameHeader);
    const std::span<const std::uint8_t> page = wal.subspan(at + kFrameHeader, size);
    if (be32(frame, 8) != salt1 || be32(frame, 12) != salt2) break;
    wal_checksum(frame.first(8), big, s0, s1);
    wal_checksum(page, big, s0, s1);
    if (s0 != be32(frame, 16) || s1 != be32(frame, 20) || be32(frame, 0) == 0) break;
    pending[be32(frame, 0)] = page;
    if (const std::uint32_t commit = be32(frame, 4); commit != 0) {
      for (const auto& [number, image] : pending) out.pages[number] = image;
      pending.clear();
      out.db_pages = commit;
    }
  }
  if (!out.pages.empty()) out.page_size = size;
  return out;
}

}  // namespace

bool SqlitePages::read_header(std::span<const std::uint8_t> header) {
  if (header.size() < kHeaderBytes || std::memcmp(header.data(), "SQLite format 3", 16) != 0) {
    return false;
  }
  std::uint32_t size = be16(header, 16);
  if (size == 1) size = 65536;
  const std::uint32_t reserved = header[20];
  // Payload fractions 64/32/32 are fixed by the format; anything else is a garbled header.
  if (!valid_page_size(size) || size - reserved < 480 || header[21] != 64 || header[22] != 32 ||
      header[23] != 32) {
    return false;
  }
  page_size_ = size;
  usable_size_ = size - reserved;
  header_page_count_ = be32(header, 28);
  application_id_ = static_cast<std::int32_t>(be32(header, 68));
  return true;
}

SqlitePages::SqlitePages(std::span<const std::uint8_t> file, std::span<const std::uint8_t> wal)
    : file_(file) {
  WalImage image = read_wal(wal);
  // Page 1 in the log holds the newer header.
  const auto first = image.pages.find(1);
  header_sane_ = read_header(first != image.pages.end() ? first->second : file);
  if (image.page_size != 0) {
    if (!header_sane_ || page_size_ != image.page_size) {
      page_size_ = image.page_size;  // the log's own header says it
      usable_size_ = image.page_size;
    }
    if (header_sane_) header_page_count_ = image.db_pages;
    wal_ = std::move(image.pages);
    page_count_ = image.db_pages;
    return;
  }
  if (!header_sane_ && !probe_page_size()) return;
  page_count_ = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(file.size() / page_size_, std::uint64_t{UINT32_MAX}));
}

// The header is garbled: the page size whose pages look most like b-tree pages. A multiple of
// the true size sees as large a share of plausible pages (its pages start on true pages) but
// fewer of them; a fraction of it about as many, but a smaller share. Count times share peaks
// at the true size; a tie goes to the smaller size.
bool SqlitePages::probe_page_size() {
  double best = 0;
  for (std::uint32_t size = 512; size <= 65536; size *= 2) {
    const std::size_t pages = file_.size() / size;
    if (pages < 2) break;
    std::size_t plausible = 0;
    for (std::size_t p = 1; p < pages; ++p) {  // page 1 holds the garbled header: not counted
      if (plausible_btree(file_.subspan(p * size, size), 0, size)) ++plausible;
    }
    const double score = static_cast<double>(plausible) * static_cast<double>(plausible) /
                         static_cast<double>(pages - 1);
    if (score > best) {
      best = score;
      page_size_ = size;
      usable_size_ = size;
    }
  }
  return best > 0;
}

std::span<const std::uint8_t> SqlitePages::page_bytes(std::uint32_t number) const {
  if (number == 0 || number > page_count_) return {};
  if (const auto logged = wal_.find(number); logged != wal_.end()) return logged->second;
  const std::uint64_t at = std::uint64_t{number - 1} * page_size_;
  if (at + page_size_ > file_.size()) return {};  // past the end of a file cut short
  return file_.subspan(static_cast<std::size_t>(at), page_size_);
}

// The payload of a cell at `at`: its local part, then its overflow chain (fileformat2 2.3.1.2).
bool SqlitePages::read_payload(std::span<const std::uint8_t> page, std::size_t at,
                               std::uint64_t payload_size, bool index,
                               std::vector<std::uint8_t>& out,
                               std::set<std::uint32_t>& chain) const {
  const std::uint64_t u = usable_size_;
  if (payload_size > kMaxPayloadBytes || payload_size > std::uint64_t{page_count_} * u) {
    return false;
  }
  const std::uint64_t max_local = index ? ((u - 12) * 64 / 255) - 23 : u - 35;
  const std::uint64_t min_local = ((u - 12) * 32 / 255) - 23;
  std::uint64_t local = payload_size;
  if (payload_size > max_local) {
    const std::uint64_t k = min_local + (payload_size - min_local) % (u - 4);
    local = k <= max_local ? k : min_local;
  }
  if (at + local > u) return false;
  out.assign(page.begin() + static_cast<std::ptrdiff_t>(at),
             page.begin() + static_cast<std::ptrdiff_t>(at + local));
  if (local == payload_size) return true;
  if (at + local + 4 > u) return false;
  std::uint32_t next = be32(page, at + local);
  while (out.size() < payload_size) {
    const std::span<const std::uint8_t> overflow = page_bytes(next);
    if (overflow.empty() || !chain.insert(next).second) return false;  // missing, or a loop
    const std::uint64_t take = std::min<std::uint64_t>(payload_size - out.size(), u - 4);
    out.insert(out.end(), overflow.begin() + 4, overflow.begin() + 4 + static_cast<long>(take));
    next = be32(overflow, 0);
  }
  return true;
}

std::optional<BtreePage> SqlitePages::btree_page(std::uint32_t number) const {
  const std::span<const std::uint8_t> page = page_bytes(number);
  if (page.empty()) return std::nullopt;
  const std::size_t header_at = number == 1 ? kHeaderBytes : 0;
  if (!plausible_btree(page, header_at, usable_size_)) return std::nullopt;
  BtreePage out;
  const std::uint8_t kind = page[header_at];
  out.kind = static_cast<PageKind>(kind);
  const bool interior = is_interior(kind);
  const bool index = kind == 2 || kind == 10;
  const std::size_t header = interior ? 12 : 8;
  const std::uint32_t cells = be16(page, header_at + 3);
  const std::span<const std::uint8_t> usable = page.first(usable_size_);
  for (std::uint32_t i = 0; i < cells; ++i) {
    std::size_t at = be16(page, header_at + header + 2 * i);
    if (interior) {
      if (at + 4 > usable.size()) {
        ++out.bad_cells;
        continue;
      }
      out.children.push_back(be32(usable, at));
      at += 4;
      if (!index) continue;  // a table interior cell is its child and a rowid key
    }
    std::uint64_t payload_size = 0;
    std::uint64_t rowid = 0;
    if (!read_varint(usable, at, payload_size) || (kind == 13 && !read_varint(usable, at, rowid))) {
      ++out.bad_cells;
      continue;
    }
    std::vector<std::uint8_t> payload;
    std::set<std::uint32_t> chain;
    if (!read_payload(usable, at, payload_size, index, payload, chain)) {
      ++out.bad_cells;
      continue;
    }
    out.overflow_pages.insert(chain.begin(), chain.end());
    // An index interior cell is an entry of its own (a row, in a WITHOUT ROWID table).
    auto values = decode_record(payload);
    if (!values) {
      ++out.bad_cells;
      continue;
    }
    PageRecord record;
    record.page = number;
    if (kind == 13) record.rowid = static_cast<std::int64_t>(rowid);
    record.values = std::move(*values);
    out.records.push_back(std::move(record));
  }
  if (interior) out.children.push_back(be32(usable, header_at + 8));
  return out;
}

std::set<std::uint32_t> SqlitePages::freelist() const {
  std::set<std::uint32_t> out;
  if (!header_sane_) return out;
  const std::span<const std::uint8_t> first = page_bytes(1);
  if (first.size() < kHeaderBytes) return out;
  std::uint32_t trunk = be32(first, 32);
  while (trunk != 0 && out.insert(trunk).second) {
    const std::span<const std::uint8_t> page = page_bytes(trunk);
    if (page.empty()) break;
    const std::uint32_t leaves = std::min<std::uint32_t>(be32(page, 4), (usable_size_ - 8) / 4);
    for (std::uint32_t i = 0; i < leaves; ++i) out.insert(be32(page, 8 + 4 * i));
    trunk = be32(page, 0);
  }
  return out;
}

}  // namespace ramguard
