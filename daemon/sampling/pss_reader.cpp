#include "sampling/pss_reader.hpp"

#include <asio/post.hpp>
#include <chrono>
#include <utility>

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

}  // namespace

PssReader::PssReader(asio::any_io_executor loop, std::filesystem::path proc_root)
    : loop_(std::move(loop)), procfs_(std::make_shared<const ProcFs>(std::move(proc_root))) {}

PssReader::~PssReader() {
  stopped_->store(true);
  worker_.join();
}

void PssReader::sum(std::vector<TargetId> processes, Done done) {
  // The job holds copies only: the loop's state is touched again only through the post back.
  asio::post(worker_, [loop = loop_, procfs = procfs_, processes = std::move(processes),
                       done = std::move(done), stopped = stopped_]() mutable {
    if (stopped->load()) return;
    const PssSum sum = read_all(*procfs, processes);
    asio::post(loop, [done = std::move(done), sum, stopped = std::move(stopped)] {
      if (!stopped->load()) done(sum);
    });
  });
}

}  // namespace ramguard
