// /proc/meminfo and cgroup memory limits: parsers on plain text, the limit walk on fake v1 and
// v2 trees in a temporary directory, and the meminfo reader on the real /proc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "procfs/cgroup_limit.hpp"
#include "procfs/meminfo.hpp"

namespace ramguard {
namespace {

namespace fs = std::filesystem;

TEST(Meminfo, ParsesTotalAndAvailable) {
  auto m = parse_meminfo(
      "MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   10500000 kB\n"
      "Buffers:  1 kB\n");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->total_bytes, 24576000ULL * 1024);
  EXPECT_EQ(m->available_bytes, 10500000ULL * 1024);
}

TEST(Meminfo, MissingOrBadLinesAreErrorsNamingThem) {
  auto old = parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\n");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find("MemAvailable"), std::string::npos);
  EXPECT_FALSE(parse_meminfo("MemTotal: x kB\nMemAvailable: 1 kB\n").ok());
  EXPECT_FALSE(parse_meminfo("").ok());
  EXPECT_FALSE(parse_meminfo("MemTotal: 99999999999999999999 kB\nMemAvailable: 1 kB\n").ok());
  // A longer name that starts like ours is not ours.
  EXPECT_FALSE(parse_meminfo("MemTotalX: 1 kB\nMemAvailable: 1 kB\n").ok());
}

TEST(Meminfo, ReadsTheRealFileRepeatedly) {
  auto reader = MeminfoReader::open("/proc");
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  for (int i = 0; i < 3; ++i) {
    auto m = reader->read();
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_GT(m->total_bytes, 0u);
    EXPECT_LE(m->available_bytes, m->total_bytes);
  }
  auto missing = MeminfoReader::open("/nonexistent-proc");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent-proc/meminfo"), std::string::npos);
}

TEST(CgroupLimit, ParsesNumbersMaxAndV1Unlimited) {
  EXPECT_EQ(**parse_cgroup_limit("314572800\n"), 314572800u);
  EXPECT_FALSE(parse_cgroup_limit("max\n")->has_value());
  EXPECT_FALSE(parse_cgroup_limit("9223372036854771712\n")->has_value());
  EXPECT_FALSE(parse_cgroup_limit("lots\n").ok());
  EXPECT_FALSE(parse_cgroup_limit("").ok());
}

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ramguard-limit-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  fs::path root_;
};

TEST_F(CgroupTree, V2TakesTheSmallestLimitUpTheHierarchy) {
  put("kubepods.slice/memory.current", "1\n");
  put("kubepods.slice/memory.max", "8000000000\n");
  put("kubepods.slice/pod1/memory.current", "1\n");
  put("kubepods.slice/pod1/memory.max", "2000000000\n");
  put("kubepods.slice/pod1/ctr/memory.current", "1\n");
  put("kubepods.slice/pod1/ctr/memory.max", "max\n");
  auto limit = read_cgroup_limit(root_, root_ / "kubepods.slice/pod1/ctr");
  ASSERT_TRUE(limit.ok()) << limit.error().message;
  ASSERT_TRUE(limit->bytes.has_value());
  EXPECT_EQ(*limit->bytes, 2000000000u);
  EXPECT_EQ(limit->binding_dir, root_ / "kubepods.slice/pod1");
}

TEST_F(CgroupTree, V1WithoutALimitAnywhereHasNone) {
  put("memory/memory.usage_in_bytes", "1\n");
  put("memory/memory.limit_in_bytes", "9223372036854771712\n");
  put("memory/a/memory.usage_in_bytes", "1\n");
  put("memory/a/memory.limit_in_bytes", "9223372036854771712\n");
  auto limit = read_cgroup_limit(root_, root_ / "memory/a");
  ASSERT_TRUE(limit.ok()) << limit.error().message;
  EXPECT_FALSE(limit->bytes.has_value());
  put("memory/memory.limit_in_bytes", "4096000\n");  // the limit at the hierarchy's root binds
  EXPECT_EQ(*read_cgroup_limit(root_, root_ / "memory/a")->bytes, 4096000u);
}

TEST_F(CgroupTree, AGarbledLimitIsAnErrorNamingTheFile) {
  put("x/memory.current", "1\n");
  put("x/memory.max", "a lot\n");
  auto limit = read_cgroup_limit(root_, root_ / "x");
  ASSERT_FALSE(limit.ok());
  EXPECT_NE(limit.error().message.find("x/memory.max"), std::string::npos);
}

TEST_F(CgroupTree, AProcessLimitComesFromItsCgroupLine) {
  put("proc/42/cgroup", "0::/pod/ctr\n");
  put("cg/pod/memory.current", "1\n");
  put("cg/pod/memory.max", "3000000000\n");
  put("cg/pod/ctr/memory.current", "1\n");
  put("cg/pod/ctr/memory.max", "max\n");
  auto limit = process_cgroup_limit(root_ / "proc", 42, root_ / "cg");
  ASSERT_TRUE(limit.ok()) << limit.error().message;
  EXPECT_EQ(*limit->bytes, 3000000000u);
}

}  // namespace
}  // namespace ramguard
