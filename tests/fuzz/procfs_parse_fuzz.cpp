// libFuzzer target for the procfs parsers (clang only):
//   procfs_parse_fuzz -max_len=8192 NEW_CORPUS_DIR tests/fuzz/corpus
#include <cstdlib>

#include "fuzz/procfs_parse_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!ramguard::fuzz::procfs_parse_one(data, size)) std::abort();
  return 0;
}
