// libFuzzer target for the salvage's page reader (clang only):
//   sqlite_pages_fuzz -max_len=16384 NEW_CORPUS_DIR tests/fuzz/sqlite_pages_corpus
#include <cstdlib>

#include "fuzz/sqlite_pages_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!ramguard::fuzz::sqlite_pages_read(data, size)) std::abort();
  return 0;
}
