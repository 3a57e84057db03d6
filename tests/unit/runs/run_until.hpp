#pragma once
// Runs an io_context in small slices until a condition holds or the time is up.

#include <asio/io_context.hpp>
#include <chrono>

namespace ramguard::test {

template <typename Pred>
bool run_until(asio::io_context& io, Pred done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(2));
  }
  return done();
}

}  // namespace ramguard::test
