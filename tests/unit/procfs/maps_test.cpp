// The maps parser and the placement of census ranges, on fixture text; then a real process:
// this test's own anonymous, file-backed and /dev/shm mappings, placed and their resident
// bytes read from pagemap.
#include "procfs/maps.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace ramguard {
namespace {

constexpr const char* kMaps =
    "55d0c0000000-55d0c0021000 r--p 00000000 08:01 131090                     /usr/bin/python3.11\n"
    "55d0c2000000-55d0c8000000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f0000000000-7f0040000000 rw-p 00000000 00:00 0 \n"
    "7f0040000000-7f0050000000 r--s 00000000 08:01 524300                     /data/ckpt.pt\n"
    "7f0050000000-7f0051000000 rw-s 00000000 00:19 77                         /dev/shm/torch_9_1 "
    "(deleted)\n"
    "7f0051000000-7f0052000000 rw-s 00000000 00:01 1025                       /memfd:pool "
    "(deleted)\n"
    "7f0052000000-7f0053000000 rw-s 00000000 00:05 3                          /dev/nvidia0\n"
    "7f0053000000-7f0054000000 rw-s 00000000 00:01 4                          /dev/zero (deleted)\n"
    "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n";

TEST(ParseMaps, ReadsEveryMappingAndClassifiesIt) {
  auto maps = parse_maps(kMaps);
  ASSERT_TRUE(maps.ok()) << maps.error().message;
  ASSERT_EQ(maps->size(), 9u);
  EXPECT_EQ((*maps)[0].path, "/usr/bin/python3.11");
  EXPECT_EQ((*maps)[0].kind, MappingKind::kFile);
  EXPECT_EQ((*maps)[1].kind, MappingKind::kAnon);  // [heap]
  EXPECT_EQ((*maps)[2].start, 0x7f0000000000u);
  EXPECT_EQ((*maps)[2].end, 0x7f0040000000u);
  EXPECT_EQ((*maps)[2].path, "");
  EXPECT_EQ((*maps)[2].kind, MappingKind::kAnon);
  EXPECT_EQ((*maps)[3].kind, MappingKind::kFile);
  EXPECT_TRUE((*maps)[3].shared);
  EXPECT_EQ((*maps)[4].path, "/dev/shm/torch_9_1 (deleted)");
  EXPECT_EQ((*maps)[4].kind, MappingKind::kShmem);
  EXPECT_EQ((*maps)[5].kind, MappingKind::kShmem);   // memfd
  EXPECT_EQ((*maps)[6].kind, MappingKind::kDevice);  // a GPU driver's mapping
  EXPECT_EQ((*maps)[7].kind, MappingKind::kShmem);   // shared anonymous
  EXPECT_EQ((*maps)[8].kind, MappingKind::kAnon);    // [stack]
}

TEST(ParseMaps, NamesTheLineItCannotRead) {
  for (const char* bad : {"zz-10 rw-p 0 00:00 0\n", "10-20 rw 0 00:00 0\n", "10-20 rw-p 0 0000 0\n",
                          "10-20 rw-p 0 00:00 x\n", "20-10 rw-p 0 00:00 0\n"}) {
    auto maps = parse_maps(bad);
    ASSERT_FALSE(maps.ok()) << bad;
    EXPECT_NE(maps.error().message.find("maps line '"), std::string::npos) << maps.error().message;
  }
  EXPECT_TRUE(parse_maps("").ok());
}

TEST(PlaceRanges, SplitsRangesByTheMappingsTheyLieIn) {
  auto maps = parse_maps(kMaps);
  ASSERT_TRUE(maps.ok());
  const std::vector<CensusRange> ranges = {
      {0x7f0000001000, 0x100000},   // anonymous mmap
      {0x7f0040000000, 0x2000000},  // the checkpoint file
      {0x7f0050000000, 0x1000000},  // /dev/shm
      {0x7f0052000000, 0x1000},     // device
      {0x7f004fff0000, 0x20000},    // spans the file and the shm mapping
      {0x100, 0x1000},              // in no mapping
  };
  const CensusPlacement p = place_ranges(*maps, ranges);
  EXPECT_EQ(p.anon_bytes, 0x100000u);
  EXPECT_EQ(p.file_bytes, 0x2000000u + 0x10000u);
  EXPECT_EQ(p.shmem_bytes, 0x1000000u + 0x10000u);
  EXPECT_EQ(p.device_bytes, 0x1000u);
  EXPECT_EQ(p.unmapped_bytes, 0x1000u);
  ASSERT_EQ(p.files.size(), 1u);
  EXPECT_EQ(p.files[0], "/data/ckpt.pt");
}

TEST(PlaceCensus, ThisProcessesMappingsAndTheirResidentBytes) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t size = 64 * static_cast<std::size_t>(page);
  // Anonymous: half of it touched.
  void* anon = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  std::memset(anon, 1, size / 2);
  // /dev/shm, all touched.
  const std::string shm = "/dev/shm/ramguard-maps-test-" + std::to_string(::getpid());
  const int fd = ::open(shm.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  void* shared = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(shared, MAP_FAILED);
  std::memset(shared, 2, size);
  const std::vector<CensusRange> ranges = {{reinterpret_cast<std::uint64_t>(anon), size},
                                           {reinterpret_cast<std::uint64_t>(shared), size}};
  const CensusPlacement p =
      place_census("/proc", ::getpid(), ranges, static_cast<std::uint64_t>(page));
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.anon_bytes, size);
  EXPECT_EQ(p.shmem_bytes, size);
  EXPECT_EQ(p.unmapped_bytes, 0u);
  ASSERT_TRUE(p.resident_known);
  EXPECT_EQ(p.resident_bytes, size / 2 + size);
  ::munmap(anon, size);
  ::munmap(shared, size);
  ::close(fd);
  ::unlink(shm.c_str());
  EXPECT_NE(place_census("/proc", 0x7ffffff0, ranges, 4096).error, "");
}

}  // namespace
}  // namespace ramguard
