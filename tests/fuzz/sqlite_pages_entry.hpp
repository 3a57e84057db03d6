#pragma once
// The one fuzz entry point for the page reader of a ledger's salvage (store/sqlite_pages.hpp),
// shared by the libFuzzer target (sqlite_pages_fuzz) and the sqlite_pages_fuzz_smoke gtest. The
// input is a whole file. Returns false when an invariant is broken:
//   - the page size is 0 (nothing found) or a power of two in 512..65536, and the pages it
//     counts lie inside the file;
//   - every page reads (or is refused) without a read outside the input (the sanitizers see it);
//     a table leaf's records carry rowids, an index page's do not.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "store/sqlite_pages.hpp"

namespace ramguard::fuzz {

inline bool sqlite_pages_read(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> file(data, size);
  const SqlitePages pages(file);
  const std::uint32_t page_size = pages.page_size();
  if (page_size != 0 && (page_size < 512 || page_size > 65536 || !std::has_single_bit(page_size))) {
    return false;
  }
  if (std::uint64_t{pages.page_count()} * page_size > size) return false;
  for (std::uint32_t p = 0; p <= pages.page_count() + 1; ++p) {
    const auto page = pages.btree_page(p);
    if (!page) continue;
    if (p == 0 || p > pages.page_count()) return false;
    for (const PageRecord& r : page->records) {
      if (r.rowid.has_value() != (page->kind == PageKind::kTableLeaf)) return false;
    }
  }
  (void)pages.freelist();
  (void)decode_record(file);
  return true;
}

}  // namespace ramguard::fuzz
