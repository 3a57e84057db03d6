// The OOM-kill counter lookup: parsers on plain text, the reader on a fake cgroup tree.
#include "procfs/cgroup.hpp"

#include <gtest/gtest.h>

#include "procfs/proc_fs.hpp"
#include "unit/procfs/fake_proc.hpp"

namespace ramguard {
namespace {

TEST(Cgroup, ParsesV1MemoryLine) {
  auto r =
      parse_memory_cgroup("9:name=systemd:/\n5:devices:/\n4:memory,foo:/process_api/abc\n0::/\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->path, "/process_api/abc");
  EXPECT_FALSE(r->v2);
}

TEST(Cgroup, FallsBackToV2AndKeepsColonsInPath) {
  auto r = parse_memory_cgroup("0::/user.slice/a:b.scope\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->path, "/user.slice/a:b.scope");
  EXPECT_TRUE(r->v2);
}

TEST(Cgroup, RejectsHostileText) {
  EXPECT_FALSE(parse_memory_cgroup("").ok());
  EXPECT_FALSE(parse_memory_cgroup("garbage").ok());
  EXPECT_FALSE(parse_memory_cgroup("4:memory:/../../etc\n").ok());
  EXPECT_FALSE(parse_memory_cgroup("4:memory:relative\n").ok());
}

TEST(Cgroup, ParsesOomKill) {
  EXPECT_EQ(*parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 3u);
  EXPECT_EQ(*parse_oom_kill_count("low 0\nhigh 0\nmax 5\noom 2\noom_kill 1\n"), 1u);
  EXPECT_FALSE(parse_oom_kill_count("oom_kill_disable 0\n").ok());
  EXPECT_FALSE(parse_oom_kill_count("oom_kill x\n").ok());
}

TEST(Cgroup, FindsAndReadsTheCounterInAFakeTree) {
  testing::FakeProcTree proc;
  proc.add(42, testing::FakeProcess{});
  proc.write(42, "cgroup", "4:memory:/jobs/coord\n0::/\n");
  testing::FakeProcTree cg;  // used as /sys/fs/cgroup
  std::filesystem::create_directories(cg.root() / "memory/jobs/coord");
  std::ofstream(cg.root() / "memory/jobs/coord/memory.oom_control")
      << "oom_kill_disable 0\nunder_oom 0\noom_kill 7\n";
  auto file = find_oom_counter(proc.root(), 42, cg.root());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(*read_oom_kill_count(*file), 7u);

  proc.write(42, "cgroup", "4:memory:/elsewhere\n");
  auto missing = find_oom_counter(proc.root(), 42, cg.root());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("elsewhere"), std::string::npos);
}

TEST(Cgroup, RealSelfHasAMemoryCgroupLine) {
  auto text = read_small_file("/proc/self/cgroup", 65536);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_TRUE(parse_memory_cgroup(*text).ok());
}

}  // namespace
}  // namespace ramguard
