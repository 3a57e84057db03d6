#pragma once
// The names of what a run measures, checked in one place for runs and admissions.

#include <string>
#include <string_view>

#include "common/result.hpp"

namespace ramguard {

// "", "process", "tree" or "cgroup"; anything else is an error naming it.
inline Status check_run_scope(std::string_view scope) {
  if (scope.empty() || scope == "process" || scope == "tree" || scope == "cgroup") {
    return ok_status();
  }
  return Error{
      "scope '" + std::string(scope.substr(0, 16)) + "' is not known; use process, tree or cgroup",
      ErrorKind::kInvalidArgument};
}

}  // namespace ramguard
