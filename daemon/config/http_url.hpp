#pragma once
// A plain-HTTP endpoint from a URL in the configuration (admission.history.prometheus_url).
// https is refused with a clear error: the daemon speaks plain HTTP to a query endpoint on a
// trusted network or a local TLS-terminating proxy, so it needs no TLS library.

#include <cstdint>
#include <string>
#include <string_view>

#include "ramguard/base/result.hpp"

namespace ramguard {

struct HttpUrl {
  std::string host;         // a name or an IPv4/IPv6 literal (without brackets)
  std::uint16_t port = 80;  // from the URL, 80 when it names none
  std::string path_prefix;  // "" or "/prefix" without a trailing slash
};

// "http://HOST[:PORT][/PREFIX]"; no user info, query or fragment. Errors name the problem.
Result<HttpUrl> parse_http_url(std::string_view url);

}  // namespace ramguard
