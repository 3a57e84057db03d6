#include "config/token_file.hpp"

#include "procfs/proc_fs.hpp"

namespace ramguard {

Result<std::string> read_token_file(const std::string& path, std::string_view what) {
  auto text = read_small_file(path, 4096);
  if (!text) return Error{std::string(what) + " file: " + text.error().message};
  std::string token = *text;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (token.size() < 16)
    return Error{std::string(what) + " in " + path + " is shorter than 16 characters"};
  return token;
}

}  // namespace ramguard
