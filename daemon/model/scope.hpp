#pragma once
// What a run (or a watched PID) measures, typed once: every layer passes a Scope, and its name
// appears as text only where it is parsed (the protocol, the configuration, the ledger) and
// printed (replies, metrics, logs, the ledger).

#include <cstdint>
#include <string>
#include <string_view>

#include "ramguard/base/result.hpp"

namespace ramguard {

enum class Scope : std::uint8_t {
  kProcess,  // the PID alone
  kTree,     // the PID and its descendants, re-read as they come and go
  kCgroup,   // the memory cgroup's counters: every process in it, page cache and kernel memory
};

inline const char* scope_name(Scope scope) {
  switch (scope) {
    case Scope::kTree:
      return "tree";
    case Scope::kCgroup:
      return "cgroup";
    case Scope::kProcess:
      break;
  }
  return "process";
}

// "" (the protocol's default) and "process" are the process; anything else is an error naming
// the text (cut to 16 bytes: it is the caller's).
inline Result<Scope> parse_scope(std::string_view name) {
  if (name.empty() || name == "process") return Scope::kProcess;
  if (name == "tree") return Scope::kTree;
  if (name == "cgroup") return Scope::kCgroup;
  return Error{
      "scope '" + std::string(name.substr(0, 16)) + "' is not known; use process, tree or cgroup",
      ErrorKind::kInvalidArgument};
}

}  // namespace ramguard
