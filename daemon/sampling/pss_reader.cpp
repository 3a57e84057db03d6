#include "sampling/pss_reader.hpp"

#include <asio/co_spawn.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>

namespace ramguard {
namespace {

PssSum read_all(const ProcFs& procfs, const std::vector<TargetId>& processes) {
  const auto began = std::chrono::steady_clock::now();
  PssSum out;
  for (const TargetId& id : processes) {
    auto handle = procfs.open(id.pid);
    if (!handle || !(handle->id() == id)) continue;  // exited, or the PID names another process
    auto pss = handle->read_pss();
    if (!pss) continue;
    out.pss_bytes += *pss;
    ++out.processes_read;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return out;
}

// A coroutine function, not a lambda: its arguments live in its own frame.
asio::awaitable<PssSum> read_elsewhere(const ProcFs* procfs, std::vector<TargetId> processes) {
  co_return read_all(*procfs, processes);
}

}  // namespace

PssReader::PssReader(std::filesystem::path proc_root) : procfs_(std::move(proc_root)) {}

PssReader::~PssReader() {
  worker_.join();
}

asio::awaitable<PssSum> PssReader::sum(std::vector<TargetId> processes) {
  co_return co_await asio::co_spawn(worker_, read_elsewhere(&procfs_, std::move(processes)),
                                    asio::use_awaitable);
}

}  // namespace ramguard
