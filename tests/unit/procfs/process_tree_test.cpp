// The tree scope's reader on a fixture /proc declared here: descendants found through
// task/*/children (several threads, grandchildren), summed per process, dropped when they exit
// or are re-parented away. Real processes: tests/integration/tree_scope_test.cpp.
#include "procfs/process_tree.hpp"

#include <gtest/gtest.h>

#include "unit/procfs/fake_proc.hpp"

namespace ramguard {
namespace {

void children(testing::FakeProcTree& proc, pid_t pid, pid_t tid, const std::string& list) {
  std::filesystem::create_directories(proc.dir(pid) / "task" / std::to_string(tid));
  proc.write(pid, "task/" + std::to_string(tid) + "/children", list);
}

testing::FakeProcess process_with_rss_pages(std::uint64_t pages) {
  testing::FakeProcess p;
  p.resident_pages = pages;
  p.size_pages = pages * 2;  // 0 pages: an exited process
  p.shared_pages = 0;
  // The periodic reading is status's: the same RSS, all anonymous.
  p.rss_kb = p.hwm_kb = p.anon_kb = pages * 4;
  p.file_kb = p.shmem_kb = p.swap_kb = 0;
  if (pages == 0) p.state = 'Z';  // exited: a zombie's status has no memory lines
  return p;
}

TEST(ReadChildren, ListsTheChildrenOfEveryThread) {
  testing::FakeProcTree proc;
  proc.add(10, process_with_rss_pages(1));
  children(proc, 10, 10, "11 12 ");
  children(proc, 10, 13, "14\n");  // a child forked by another thread
  EXPECT_EQ(read_children(proc.root(), 10), (std::vector<pid_t>{11, 12, 14}));
  EXPECT_TRUE(read_children(proc.root(), 99).empty());  // gone: no children, no error
}

TEST(ProcessTree, SumsDescendantsAndFollowsThemAsTheyStartAndExit) {
  testing::FakeProcTree proc;
  ProcFs fs(proc.root(), 4096);
  proc.add(10, process_with_rss_pages(100));  // the root: its own reading comes from its handle
  proc.add(11, process_with_rss_pages(1000));
  proc.add(12, process_with_rss_pages(2000));  // a grandchild, through 11
  children(proc, 10, 10, "11");
  children(proc, 11, 11, "12");
  ProcessTree tree(fs, 10);
  tree.refresh();
  EXPECT_EQ(tree.descendants(), 2u);
  MemoryReading root;
  root.rss_bytes = 100 * 4096;
  EXPECT_EQ(tree.add_descendants(root, Instant{}, false).rss_bytes, 3100u * 4096);

  // A new child appears; the grandchild's parent exits and it is re-parented away.
  proc.add(13, process_with_rss_pages(500));
  children(proc, 10, 10, "13");
  tree.refresh();
  EXPECT_EQ(tree.descendants(), 1u);
  EXPECT_EQ(tree.add_descendants(root, Instant{}, false).rss_bytes, 600u * 4096);

  // A member that has exited (a zombie's statm is all zeros) is dropped at the next reading.
  proc.update(13, process_with_rss_pages(0));
  EXPECT_EQ(tree.add_descendants(root, Instant{}, false).rss_bytes, 100u * 4096);
  EXPECT_EQ(tree.descendants(), 0u);
}

// At a complete reading the tree keeps each process's counted memory (anon + shmem + swap from
// status) and command name, the root first: what tree attribution names.
TEST(ProcessTree, ACompleteReadingKeepsEachProcesssShareAndCommand) {
  testing::FakeProcTree proc;
  ProcFs fs(proc.root(), 4096);
  proc.add(10, process_with_rss_pages(100));
  testing::FakeProcess worker = process_with_rss_pages(1000);
  worker.anon_kb = 40960;
  worker.shmem_kb = 1024;
  worker.swap_kb = 0;
  proc.add(11, worker);
  proc.write(10, "comm", "python3\n");
  proc.write(11, "comm", "pt_data_worker\n");
  children(proc, 10, 10, "11");
  ProcessTree tree(fs, 10);
  tree.refresh();
  MemoryReading root;
  root.anon_bytes = 5'000'000;
  tree.add_descendants(root, Instant{}, /*complete=*/false);
  EXPECT_TRUE(tree.shares().empty()) << "periodic readings keep no shares";
  tree.add_descendants(root, Instant{}, /*complete=*/true);
  ASSERT_EQ(tree.shares().size(), 2u);
  EXPECT_EQ(tree.shares()[0].pid, 10);
  EXPECT_TRUE(tree.shares()[0].root);
  EXPECT_EQ(tree.shares()[0].command, "python3");
  EXPECT_EQ(tree.shares()[0].counted_bytes, 5'000'000u);
  EXPECT_EQ(tree.shares()[1].pid, 11);
  EXPECT_FALSE(tree.shares()[1].root);
  EXPECT_EQ(tree.shares()[1].command, "pt_data_worker");
  EXPECT_EQ(tree.shares()[1].counted_bytes, (40960u + 1024u) * 1024);
}

}  // namespace
}  // namespace ramguard
