// libFuzzer target for the YAML configuration loader (clang only):
//   config_fuzz -max_len=8192 NEW_CORPUS_DIR tests/fuzz/config_corpus
#include <cstdlib>

#include "fuzz/config_parse_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!ramguard::fuzz::config_parse_one(data, size)) std::abort();
  return 0;
}
