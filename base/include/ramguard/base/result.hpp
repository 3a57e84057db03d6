#pragma once
// A value or an error message, for everything that can fail on input it does not control
// (procfs text, configuration, requests). Errors carry a message that names the problem.

#include <string>
#include <utility>
#include <variant>

namespace ramguard {

// What kind of failure, so the control protocol can answer with the right code. Most errors
// are about input, hence the default.
enum class ErrorKind {
  kInvalidArgument,
  kNotFound,
  kPermissionDenied,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kInternal,
  kDeadlineExceeded,
};

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::kInvalidArgument;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// For operations that produce nothing but can fail.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() {
  return Ok{};
}

}  // namespace ramguard
