#include "procfs/parse.hpp"

#include <array>
#include <charconv>
#include <limits>

namespace ramguard {
namespace {

constexpr std::uint64_t kBytesPerKb = 1024;

// Hostile text ends up in messages: quote at most 40 characters, non-printables escaped.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  out += text.size() > kMax ? "\"..." : "\"";
  return out;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Splits off the next whitespace-separated token; empty when none is left.
std::string_view next_token(std::string_view& rest) {
  while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
  std::size_t n = 0;
  while (n < rest.size() && !is_space(rest[n])) ++n;
  const std::string_view token = rest.substr(0, n);
  rest.remove_prefix(n);
  return token;
}

Error too_big(std::string_view file, std::size_t size, std::size_t limit) {
  return Error{std::string(file) + " text is " + std::to_string(size) + " bytes, more than the " +
               std::to_string(limit) + " allowed"};
}

// "   1234 kB" -> bytes.
Result<std::uint64_t> parse_kb_value(std::string_view value, std::string_view key) {
  std::string_view rest = value;
  const std::string_view number = next_token(rest);
  const std::string_view unit = next_token(rest);
  if (unit != "kB" || !trim(rest).empty()) {
    return Error{"status " + std::string(key) + " is " + excerpt(value) +
                 ", expected a number of kB"};
  }
  auto kb = parse_decimal_u64(number, "status " + std::string(key));
  if (!kb) return kb.error();
  if (*kb > std::numeric_limits<std::uint64_t>::max() / kBytesPerKb) {
    return Error{"status " + std::string(key) + " " + excerpt(number) + " kB overflows 64 bits"};
  }
  return *kb * kBytesPerKb;
}

}  // namespace

Result<std::uint64_t> parse_decimal_u64(std::string_view text, std::string_view what) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end) {
    return Error{std::string(what) + " is " + excerpt(text) + ", expected a decimal number"};
  }
  if (ec == std::errc::result_out_of_range) {
    return Error{std::string(what) + " " + excerpt(text) + " overflows 64 bits"};
  }
  return value;
}

Result<StatmPages> parse_statm(std::string_view text) {
  if (text.size() > kMaxStatmBytes) return too_big("statm", text.size(), kMaxStatmBytes);
  // size resident shared text lib data dt: the first six matter, later kernels may add more.
  std::array<std::uint64_t, 6> v{};
  static constexpr std::array<const char*, 6> kNames = {
      "statm size", "statm resident", "statm shared", "statm text", "statm lib", "statm data"};
  std::string_view rest = text;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string_view token = next_token(rest);
    if (token.empty()) {
      return Error{"statm " + excerpt(text) + " has " + std::to_string(i) +
                   " fields, expected at least 6"};
    }
    auto n = parse_decimal_u64(token, kNames[i]);
    if (!n) return n.error();
    v[i] = *n;
  }
  for (std::string_view token = next_token(rest); !token.empty(); token = next_token(rest)) {
    auto n = parse_decimal_u64(token, "statm extra field");
    if (!n) return n.error();
  }
  if (v[2] > v[1]) {
    return Error{"statm shared pages (" + std::to_string(v[2]) + ") exceed resident pages (" +
                 std::to_string(v[1]) + ")"};
  }
  return StatmPages{v[0], v[1], v[2], v[3], v[5]};
}

Result<std::uint64_t> parse_smaps_rollup_pss(std::string_view text) {
  if (text.size() > kMaxStatusBytes) return too_big("smaps_rollup", text.size(), kMaxStatusBytes);
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t eol = rest.find('\n');
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    if (line.starts_with("Pss:")) return parse_kb_value(line.substr(4), "Pss");
  }
  return Error{"smaps_rollup has no Pss line"};
}

Result<StatusFields> parse_status(std::string_view text) {
  if (text.size() > kMaxStatusBytes) return too_big("status", text.size(), kMaxStatusBytes);
  StatusFields out;
  enum Seen : unsigned {
    kName = 1,
    kUid = 2,
    kRss = 4,
    kHwm = 8,
    kAnon = 16,
    kFile = 32,
    kShmem = 64,
    kSwap = 128,
    kState = 256
  };
  unsigned seen = 0;
  bool has_address_space = false;  // a VmSize line: the process still has memory
  struct KbField {
    const char* key;
    Seen bit;
    std::uint64_t StatusFields::*field;
  };
  static constexpr std::array<KbField, 6> kKb = {{
      {"VmRSS", kRss, &StatusFields::vm_rss_bytes},
      {"VmHWM", kHwm, &StatusFields::vm_hwm_bytes},
      {"RssAnon", kAnon, &StatusFields::rss_anon_bytes},
      {"RssFile", kFile, &StatusFields::rss_file_bytes},
      {"RssShmem", kShmem, &StatusFields::rss_shmem_bytes},
      {"VmSwap", kSwap, &StatusFields::vm_swap_bytes},
  }};

  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t eol = rest.find('\n');
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // not a "Key: value" line; not ours
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    auto mark = [&](Seen bit) -> Status {
      if (seen & bit) return Error{"status has a duplicate " + std::string(key) + " line"};
      seen |= bit;
      return ok_status();
    };
    if (key == "Name") {
      if (auto s = mark(kName); !s) return s.error();
      // The kernel escapes '\n' and '\\' in Name; only the tab after the colon is ours to drop.
      out.name = std::string(value.substr(value.starts_with('\t') ? 1 : 0));
    } else if (key == "State") {
      if (auto s = mark(kState); !s) return s.error();
      const std::string_view v = trim(value);
      if (v.empty()) return Error{"status State line is empty"};
      out.state = v.front();
    } else if (key == "Uid") {
      if (auto s = mark(kUid); !s) return s.error();
      std::string_view uids = value;
      auto uid = parse_decimal_u64(next_token(uids), "status Uid (real)");
      if (!uid) return uid.error();
      if (*uid > std::numeric_limits<std::uint32_t>::max()) {
        return Error{"status Uid " + std::to_string(*uid) + " is out of range for a uid"};
      }
      out.real_uid = static_cast<std::uint32_t>(*uid);
    } else if (key == "VmSize") {
      has_address_space = true;
    } else {
      for (const auto& f : kKb) {
        if (key != f.key) continue;
        if (auto s = mark(f.bit); !s) return s.error();
        auto bytes = parse_kb_value(value, key);
        if (!bytes) return bytes.error();
        out.*(f.field) = *bytes;
      }
    }
  }

  std::string missing;
  auto need = [&](unsigned bit, const char* key) {
    if (!(seen & bit)) missing += missing.empty() ? key : std::string(", ") + key;
  };
  need(kName, "Name");
  need(kUid, "Uid");
  for (const auto& f : kKb) need(f.bit, f.key);
  if (!missing.empty()) {
    std::string hint = (seen & kRss) ? "" : " (a kernel thread or an exited process has no memory)";
    // A zombie, or a process SIGKILL is tearing down (status still says "R" or "D" but the Vm
    // lines are gone): an exit on its way, not an unreadable process. Every reader of status
    // takes this kind as "has exited".
    const bool exiting =
        out.state == 'Z' || out.state == 'X' || ((seen & kState) && !has_address_space);
    return Error{"status lacks " + missing + hint,
                 exiting ? ErrorKind::kNotFound : ErrorKind::kInvalidArgument};
  }
  return out;
}

Result<StatFields> parse_stat(std::string_view text) {
  if (text.size() > kMaxStatBytes) return too_big("stat", text.size(), kMaxStatBytes);
  const std::size_t open = text.find('(');
  const std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Error{"stat " + excerpt(text) + " has no \"(comm)\" field"};
  }
  StatFields out;
  auto pid = parse_decimal_u64(trim(text.substr(0, open)), "stat pid");
  if (!pid) return pid.error();
  if (*pid == 0 || *pid > static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max())) {
    return Error{"stat pid " + std::to_string(*pid) + " is out of range"};
  }
  out.pid = static_cast<pid_t>(*pid);
  out.comm = std::string(text.substr(open + 1, close - open - 1));

  // After the last ')': field 3 (state) onwards. Field 22 (starttime) is token index 19.
  std::string_view rest = text.substr(close + 1);
  constexpr std::size_t kStartTimeIndex = 19;
  std::array<std::string_view, kStartTimeIndex + 1> tokens;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = next_token(rest);
    if (tokens[i].empty()) {
      return Error{"stat is truncated: " + std::to_string(i + 2) + " fields, expected at least 22"};
    }
  }
  if (tokens[0].size() != 1) return Error{"stat state " + excerpt(tokens[0]) + " is not a letter"};
  out.state = tokens[0].front();
  auto ppid = parse_decimal_u64(tokens[1], "stat ppid");
  if (!ppid) return ppid.error();
  if (*ppid > static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max())) {
    return Error{"stat ppid " + std::to_string(*ppid) + " is out of range"};
  }
  out.ppid = static_cast<pid_t>(*ppid);
  auto start = parse_decimal_u64(tokens[kStartTimeIndex], "stat starttime (field 22)");
  if (!start) return start.error();
  out.start_time_ticks = *start;
  return out;
}

}  // namespace ramguard
