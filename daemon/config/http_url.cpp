#include "config/http_url.hpp"

#include <charconv>

namespace ramguard {

Result<HttpUrl> parse_http_url(std::string_view url) {
  const std::string quoted = "'" + std::string(url) + "'";
  if (url.starts_with("https://")) {
    return Error{quoted +
                 ": https is not supported; give the plain http:// address of the "
                 "query endpoint, or of a local proxy that speaks TLS to it"};
  }
  if (!url.starts_with("http://")) return Error{quoted + " does not start with http://"};
  std::string_view rest = url.substr(7);
  if (rest.find_first_of("?#@ ") != std::string_view::npos) {
    return Error{quoted + ": no user info, query, fragment or spaces allowed"};
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  HttpUrl out;
  if (slash != std::string_view::npos) {
    out.path_prefix = std::string(rest.substr(slash));
    while (!out.path_prefix.empty() && out.path_prefix.back() == '/') out.path_prefix.pop_back();
  }
  std::string_view port_text;
  if (authority.starts_with("[")) {  // [IPv6]:port
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return Error{quoted + ": unclosed '[' in the host"};
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(":")) return Error{quoted + ": bad host"};
    if (!after.empty()) port_text = after.substr(1);
  } else {
    const auto colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Error{quoted + " names no host"};
  if (!port_text.empty() || authority.ends_with(":")) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return Error{quoted + ": the port must be a number from 1 to 65535"};
    }
    out.port = static_cast<std::uint16_t>(port);
  }
  return out;
}

}  // namespace ramguard
