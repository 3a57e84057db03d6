// libFuzzer target for the binary framing's decoder (clang only):
//   frame_fuzz -max_len=4096 NEW_CORPUS_DIR tests/fuzz/frame_corpus
#include <cstdlib>

#include "fuzz/frame_decode_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!ramguard::fuzz::frame_decode_stream(data, size)) std::abort();
  return 0;
}
