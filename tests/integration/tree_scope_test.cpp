// The `tree` run scope on real processes: a run on this test process with scope tree measures
// its children (memchild) and grandchildren (a python3 child that starts its own), a spike in
// a child between samples shows in the phase peak (the sum of the members' high-water marks),
// and a grandchild re-parented away when its parent dies stops counting.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include "harness.hpp"

extern char** environ;

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

v1::Reply request_start(const Daemon& d, const std::string& scope) {
  v1::Request request;
  auto& s = *request.mutable_run_start();
  s.set_pid(static_cast<std::uint32_t>(::getpid()));
  s.set_job("tree-scope");
  s.set_scope(scope);
  return d.call(request);
}

v1::Reply mark(const Daemon& d, const std::string& run, v1::MarkRequest::Kind kind) {
  v1::Request request;
  auto& m = *request.mutable_mark();
  m.set_run_id(run);
  m.set_kind(kind);
  m.set_phase("aggregation");
  return d.call(request);
}

std::uint64_t last_rss(const Daemon& d, const std::string& run) {
  v1::Request request;
  request.mutable_status()->set_run_id(run);
  const v1::Reply reply = d.call(request);
  return reply.status().runs_size() == 1 ? reply.status().runs(0).last().rss_bytes() : 0;
}

// python3 in its own process group, whose child (our grandchild) holds 160 MiB until killed.
pid_t spawn_parent_of_a_grandchild() {
  const char* script =
      "import subprocess, sys, time\n"
      "code = 'b = bytearray(160 << 20)\\nb[::4096] = b\"\\\\x01\" * (len(b) // 4096)\\n"
      "import time\\nwhile True: time.sleep(1)'\n"
      "subprocess.Popen([sys.executable, '-c', code])\n"
      "while True: time.sleep(1)\n";
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const char* argv[] = {"python3", "-c", script, nullptr};
  pid_t pid = -1;
  const int rc =
      ::posix_spawnp(&pid, "python3", nullptr, &attr, const_cast<char* const*>(argv), environ);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

TEST(TreeScope, ARunMeasuresChildrenAndGrandchildrenAndTheirPeaks) {
  auto d = Daemon::with_args({"--interval", "100ms"});
  MemChild child;
  const v1::Reply started = request_start(*d, "tree");
  ASSERT_FALSE(started.has_error()) << started.error().message();
  const std::string run = started.run_start().run_id();
  const std::uint64_t baseline = started.run_start().baseline().rss_bytes();

  // What a child keeps shows in the run's periodic readings.
  child.command("alloc kept " + std::to_string(128 * kMiB));
  EXPECT_TRUE(eventually([&] { return last_rss(*d, run) >= baseline + 120 * kMiB; }, 5s, 50ms))
      << "last " << last_rss(*d, run) << " baseline " << baseline;

  // Admission for a tree-scope run takes the tree's baseline, the child's memory included.
  const auto admit = [&](const std::string& scope) {
    v1::Request request;
    auto& a = *request.mutable_admit();
    a.set_job("tree-scope");
    a.set_estimate_bytes(1);
    a.set_pid(static_cast<std::uint32_t>(::getpid()));
    a.set_scope(scope);
    const v1::Reply reply = d->call(request);
    EXPECT_FALSE(reply.has_error()) << reply.error().message();
    return reply.admit().baseline_bytes();
  };
  EXPECT_GE(admit("tree"), admit("process") + 120 * kMiB);

  // A spike in the child between samples: its high-water mark holds it.
  ASSERT_FALSE(mark(*d, run, v1::MarkRequest::PHASE_BEGIN).has_error());
  child.command("alloc spike " + std::to_string(256 * kMiB));
  child.command("free spike");
  const v1::Reply ended = mark(*d, run, v1::MarkRequest::PHASE_END);
  ASSERT_FALSE(ended.has_error()) << ended.error().message();
  // Peaks are of the memory that counts (anon + shmem + swap): from the baseline's counted part,
  // the processes' file-backed pages (code, libraries) left out.
  const v1::Reading& base = started.run_start().baseline();
  const std::uint64_t counted_baseline = base.anon_bytes() + base.shmem_bytes() + base.swap_bytes();
  EXPECT_GE(ended.mark().phase_peak_bytes(), counted_baseline + (128 + 250) * kMiB);
  // A round end's boundary gets the tree's PSS, read off the event loop after the reply went:
  // shared pages counted once, so positive and no more than the RSS sum. No mark waits for it.
  const v1::Reply round = mark(*d, run, v1::MarkRequest::ROUND_END);
  ASSERT_FALSE(round.has_error()) << round.error().message();
  EXPECT_EQ(round.mark().reading().pss_bytes(), 0u);
  v1::BoundaryReading boundary;
  EXPECT_TRUE(eventually(
      [&] {
        v1::Request request;
        request.mutable_status()->set_run_id(run);
        const v1::Reply listed = d->call(request);
        if (listed.status().runs_size() != 1 || listed.status().runs(0).boundaries_size() < 1)
          return false;
        boundary = listed.status().runs(0).boundaries(0);
        return boundary.reading().pss_bytes() > 0;
      },
      5s, 50ms));
  EXPECT_GT(boundary.reading().pss_bytes(), 120 * kMiB);
  EXPECT_LE(boundary.reading().pss_bytes(), boundary.reading().rss_bytes());

  // A grandchild counts; once its parent dies it is re-parented away and no longer does.
  const std::uint64_t before = last_rss(*d, run);
  const pid_t parent = spawn_parent_of_a_grandchild();
  ASSERT_GT(parent, 0);
  EXPECT_TRUE(eventually([&] { return last_rss(*d, run) >= before + 150 * kMiB; }, 20s, 100ms))
      << "last " << last_rss(*d, run) << " before " << before;
  ::kill(parent, SIGKILL);
  int status = 0;
  ::waitpid(parent, &status, 0);
  EXPECT_TRUE(eventually([&] { return last_rss(*d, run) < before + 100 * kMiB; }, 5s, 100ms))
      << "last " << last_rss(*d, run) << " before " << before;
  ::kill(-parent, SIGKILL);  // the orphaned grandchild, in the same process group

  v1::Request status_request;
  status_request.mutable_status()->set_run_id(run);
  EXPECT_EQ(d->call(status_request).status().runs(0).scope(), "tree");
  v1::Request end;
  end.mutable_run_end()->set_run_id(run);
  EXPECT_FALSE(d->call(end).has_error());
  child.command("exit 0");
  child.wait();
}

// --watch tree:PID: a watched tree's series count its children's memory.
TEST(TreeScope, AWatchedTreeCountsItsChildren) {
  MemChild child;
  const std::string pid = std::to_string(::getpid());
  auto d = Daemon::with_config("metrics: { job_names: plain }\n",
                               {"--interval", "100ms", "--watch", "tree:" + pid});
  const std::string series =
      "ramguard_target_rss_bytes{ramguard_job=\"pid-" + pid + "\",run_id=\"pid-" + pid + "\"}";
  EXPECT_FALSE(d->wait_for_log("event=watch.start pid=" + pid, 5s).empty()) << d->log_text();
  EXPECT_NE(d->log_text().find("scope=tree"), std::string::npos) << d->log_text();
  const double before = metric_value(d->scrape_metrics(), series);
  ASSERT_FALSE(std::isnan(before)) << d->scrape_metrics();
  child.command("alloc kept " + std::to_string(128 * kMiB));
  EXPECT_TRUE(
      eventually([&] { return metric_value(d->scrape_metrics(), series) >= before + 120.0 * kMiB; },
                 5s, 100ms))
      << "before " << before << " now " << metric_value(d->scrape_metrics(), series);
  child.command("exit 0");
  child.wait();
}

}  // namespace
}  // namespace ramguard::testing
