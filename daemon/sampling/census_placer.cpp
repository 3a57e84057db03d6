#include "sampling/census_placer.hpp"

#include <asio/post.hpp>
#include <utility>

#include "procfs/maps.hpp"

namespace ramguard {

CensusPlacer::CensusPlacer(asio::any_io_executor loop, std::filesystem::path proc_root,
                           std::uint64_t page_size_bytes)
    : loop_(std::move(loop)), proc_root_(std::move(proc_root)), page_size_bytes_(page_size_bytes) {}

CensusPlacer::~CensusPlacer() {
  stopped_->store(true);
  worker_.join();
}

void CensusPlacer::place(pid_t pid, std::vector<CensusRange> ranges, Done done) {
  // The job holds copies only: the loop's state is touched again only through the post back.
  asio::post(worker_,
             [loop = loop_, root = proc_root_, page = page_size_bytes_, pid,
              ranges = std::move(ranges), done = std::move(done), stopped = stopped_]() mutable {
               if (stopped->load()) return;
               CensusPlacement placement = place_census(root, pid, ranges, page);
               asio::post(loop, [done = std::move(done), placement = std::move(placement),
                                 stopped = std::move(stopped)]() mutable {
                 if (!stopped->load()) done(std::move(placement));
               });
             });
}

}  // namespace ramguard
