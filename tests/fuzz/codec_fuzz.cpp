// libFuzzer target for the control protocol's request decoder (clang only):
//   codec_fuzz -max_len=4096 NEW_CORPUS_DIR tests/fuzz/codec_corpus
#include <cstdlib>

#include "fuzz/codec_decode_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!ramguard::fuzz::codec_decode_one(data, size)) std::abort();
  return 0;
}
