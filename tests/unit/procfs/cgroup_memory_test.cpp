// The `cgroup` scope's reader on fixture trees declared here: a v1 memory cgroup (usage,
// max_usage, memory.stat with hierarchical totals) and a v2 one (current, peak, stat,
// swap.current), how a cgroup is found from a path or a process, and the errors for bad paths.
// The real v1 controller is exercised by tests/integration/cgroup_scope_test.cpp.
#include "procfs/cgroup_memory.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "unit/procfs/fake_proc.hpp"

namespace ramguard {
namespace {

void put(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}
std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr const char* kV1Stat =
    "cache 100\nrss 200\nshmem 10\n"  // this cgroup alone: the totals win
    "total_cache 4096000\ntotal_rss 8192000\ntotal_rss_huge 0\ntotal_shmem 96000\n"
    "total_mapped_file 0\ntotal_swap 512\n";
constexpr const char* kV2Stat =
    "anon 7000000\nfile 3000000\nkernel 123\nshmem 1000000\nfile_mapped 5\n";

TEST(CgroupMemoryStat, V1ReadsTheHierarchicalTotalsAndV2ItsOwnLines) {
  auto v1 = parse_cgroup_memory_stat(kV1Stat, false);
  ASSERT_TRUE(v1.ok()) << v1.error().message;
  EXPECT_EQ(v1->anon_bytes, 8192000u);
  EXPECT_EQ(v1->file_bytes, 4000000u);  // cache without shmem
  EXPECT_EQ(v1->shmem_bytes, 96000u);
  EXPECT_EQ(v1->swap_bytes, 512u);
  auto v2 = parse_cgroup_memory_stat(kV2Stat, true);
  ASSERT_TRUE(v2.ok()) << v2.error().message;
  EXPECT_EQ(v2->anon_bytes, 7000000u);
  EXPECT_EQ(v2->file_bytes, 2000000u);
  EXPECT_EQ(v2->shmem_bytes, 1000000u);
}

TEST(CgroupMemoryStat, MissingOrMalformedLinesAreNamed) {
  auto none = parse_cgroup_memory_stat("cache 1\n", false);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("total_rss"), std::string::npos) << none.error().message;
  auto bad = parse_cgroup_memory_stat("anon lots\n", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("anon"), std::string::npos) << bad.error().message;
}

TEST(CgroupMemory, V1UsageStatExactPeakAndItsResetByWritingZero) {
  testing::FakeProcTree root;  // as /sys/fs/cgroup
  const auto dir = root.root() / "memory/jobs/coord";
  put(dir / "memory.usage_in_bytes", "12288000\n");
  put(dir / "memory.max_usage_in_bytes", "99999999\n");
  put(dir / "memory.stat", kV1Stat);
  put(dir / "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  auto found = find_memory_cgroup_dir(root.root(), "/jobs/coord");
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, dir);
  auto cg = CgroupMemory::open(*found);
  ASSERT_TRUE(cg.ok()) << cg.error().message;
  EXPECT_FALSE(cg->v2());
  EXPECT_TRUE(cg->has_peak());

  auto periodic = cg->read_periodic(Instant{});
  ASSERT_TRUE(periodic.ok()) << periodic.error().message;
  EXPECT_EQ(periodic->source, ReadingSource::kPeriodic);
  EXPECT_EQ(periodic->rss_bytes, 12288000u);
  EXPECT_EQ(periodic->anon_bytes, 8192000u);
  EXPECT_EQ(periodic->hwm_bytes, 0u);
  auto mark = cg->read_complete(Instant{});
  ASSERT_TRUE(mark.ok()) << mark.error().message;
  EXPECT_EQ(mark->source, ReadingSource::kMark);
  EXPECT_EQ(mark->hwm_bytes, 99999999u);
  EXPECT_EQ(*cg->oom_kills(), 3u);

  ASSERT_TRUE(cg->reset_peak().ok());
  EXPECT_EQ(slurp(dir / "memory.max_usage_in_bytes").substr(0, 2), "0\n");
}

TEST(CgroupMemory, V2CurrentPeakSwapAndAPeakNeverBelowTheReading) {
  testing::FakeProcTree root;
  const auto dir = root.root() / "kubepods/pod1/coord";
  put(dir / "memory.current", "10000000\n");
  put(dir / "memory.peak", "9000000\n");  // read before current moved up: raised to it
  put(dir / "memory.swap.current", "4096\n");
  put(dir / "memory.stat", kV2Stat);
  put(dir / "memory.events", "low 0\nhigh 0\nmax 0\noom 1\noom_kill 1\n");
  testing::FakeProcTree proc;
  proc.add(42, testing::FakeProcess{});
  proc.write(42, "cgroup", "0::/kubepods/pod1/coord\n");
  auto found = process_memory_cgroup_dir(proc.root(), 42, root.root());
  ASSERT_TRUE(found.ok()) << found.error().message;
  auto cg = CgroupMemory::open(*found);
  ASSERT_TRUE(cg.ok()) << cg.error().message;
  EXPECT_TRUE(cg->v2());
  auto mark = cg->read_complete(Instant{});
  ASSERT_TRUE(mark.ok()) << mark.error().message;
  EXPECT_EQ(mark->rss_bytes, 10000000u);
  EXPECT_EQ(mark->hwm_bytes, 10000000u);
  EXPECT_EQ(mark->swap_bytes, 4096u);
  EXPECT_EQ(mark->file_bytes, 2000000u);
  EXPECT_EQ(*cg->oom_kills(), 1u);
  ASSERT_TRUE(cg->reset_peak().ok());
  EXPECT_EQ(slurp(dir / "memory.peak").substr(0, 6), "reset\n");
}

// The memory that counts from each version's files, and the rest in its own fields: v1
// total_rss + total_shmem + total_swap; v2 anon + shmem + memory.swap.current. Page cache is the
// cache without shmem; kernel memory is the usage the split leaves. Periodic and mark readings
// count the same (v2 swap is read at both), and the counted peak leaves the cache out.
TEST(CgroupMemory, CountedBytesPageCacheAndKernelMemoryFromV1AndV2Stat) {
  testing::FakeProcTree root;
  const auto v1 = root.root() / "memory/jobs/saver";
  // usage 14 MB = rss 8.192 + cache 4.096 (shmem 0.096 of it) + 1.712 MB kernel memory.
  put(v1 / "memory.usage_in_bytes", "14000000\n");
  put(v1 / "memory.max_usage_in_bytes", "15000000\n");
  put(v1 / "memory.stat", kV1Stat);
  auto c1 = CgroupMemory::open(v1);
  ASSERT_TRUE(c1.ok()) << c1.error().message;
  for (const bool complete : {false, true}) {
    auto r = complete ? c1->read_complete(Instant{}) : c1->read_periodic(Instant{});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->counted_bytes(), 8192000u + 96000u + 512u) << complete;
    EXPECT_EQ(r->file_bytes, 4000000u);
    EXPECT_EQ(r->kernel_bytes, 14000000u - 8192000u - 4096000u);
    EXPECT_EQ(r->resident_uncounted_bytes(), 4000000u + 1712000u);
  }
  // Peak 15 MB while 5.712 MB of the usage does not count: 9.288 MB counted at the peak.
  EXPECT_EQ(c1->read_complete(Instant{})->counted_peak_bytes(), 15000000u - 5712000u);
  EXPECT_EQ(*c1->peak_usage_bytes(), 15000000u);

  const auto v2 = root.root() / "kubepods/saver";
  // current 11.5 MB = anon 7 + file 3 (shmem 1 of it) + 1.5 MB kernel; 4096 B swapped out.
  put(v2 / "memory.current", "11500000\n");
  put(v2 / "memory.peak", "12000000\n");
  put(v2 / "memory.swap.current", "4096\n");
  put(v2 / "memory.stat", kV2Stat);
  auto c2 = CgroupMemory::open(v2);
  ASSERT_TRUE(c2.ok()) << c2.error().message;
  for (const bool complete : {false, true}) {
    auto r = complete ? c2->read_complete(Instant{}) : c2->read_periodic(Instant{});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->swap_bytes, 4096u) << complete;
    EXPECT_EQ(r->counted_bytes(), 7000000u + 1000000u + 4096u) << complete;
    EXPECT_EQ(r->file_bytes, 2000000u);
    EXPECT_EQ(r->kernel_bytes, 1500000u);
  }
  EXPECT_EQ(c2->read_complete(Instant{})->counted_peak_bytes(), 12000000u - 3500000u);
}

TEST(CgroupMemory, AV2CgroupWithoutMemoryPeakHasSampledPeaksAndSaysSo) {
  testing::FakeProcTree root;
  const auto dir = root.root() / "old";
  put(dir / "memory.current", "5000\n");
  put(dir / "memory.stat", kV2Stat);
  auto cg = CgroupMemory::open(dir);
  ASSERT_TRUE(cg.ok()) << cg.error().message;
  EXPECT_FALSE(cg->has_peak());
  const Status reset = cg->reset_peak();
  ASSERT_FALSE(reset.ok());
  EXPECT_NE(reset.error().message.find("memory.peak"), std::string::npos);
  EXPECT_NE(reset.error().message.find("sampled"), std::string::npos);
  EXPECT_EQ(cg->read_complete(Instant{})->hwm_bytes, 5000u);  // the reading itself
}

TEST(CgroupMemory, BadPathsAreNamed) {
  testing::FakeProcTree root;
  std::filesystem::create_directories(root.root() / "memory/plain");  // no memory files
  auto not_memory = find_memory_cgroup_dir(root.root(), "/plain");
  ASSERT_FALSE(not_memory.ok());
  EXPECT_NE(not_memory.error().message.find("is not a memory cgroup"), std::string::npos)
      << not_memory.error().message;
  auto missing = find_memory_cgroup_dir(root.root(), "/nowhere");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("'/nowhere' does not exist"), std::string::npos)
      << missing.error().message;
  auto escape = find_memory_cgroup_dir(root.root(), "/jobs/../../etc");
  ASSERT_FALSE(escape.ok());
  EXPECT_NE(escape.error().message.find(".."), std::string::npos);
  auto open_plain = CgroupMemory::open(root.root() / "memory/plain");
  ASSERT_FALSE(open_plain.ok());
  EXPECT_NE(open_plain.error().message.find("not a memory cgroup"), std::string::npos)
      << open_plain.error().message;
  // A cgroup whose stat is garbage is refused at open, naming the directory.
  const auto broken = root.root() / "broken";
  put(broken / "memory.current", "1\n");
  put(broken / "memory.stat", "nothing here\n");
  auto open_broken = CgroupMemory::open(broken);
  ASSERT_FALSE(open_broken.ok());
  EXPECT_NE(open_broken.error().message.find(broken.string()), std::string::npos)
      << open_broken.error().message;
}

}  // namespace
}  // namespace ramguard
