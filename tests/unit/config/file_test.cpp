// Reading the file: what an unreadable one says, and SIGHUP reload semantics.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "config/load.hpp"
#include "config/reload.hpp"
#include "temp_dir.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

TEST(ConfigFile, ReadsAValidFile) {
  TempDir dir;
  auto c = load_config_file(dir.write("ok.yaml", "budget: 4GB\n"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->budget_bytes, 4'000'000'000u);
}

TEST(ConfigFile, TrustedUidsReplaceRootsDefault) {
  EXPECT_EQ(default_config().admission.trusted_uids, std::vector<std::uint32_t>{0});
  auto c = parse_config_yaml("admission:\n  trusted_uids: [0, 1000]\n", "f");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->admission.trusted_uids, (std::vector<std::uint32_t>{0, 1000}));
  auto none = parse_config_yaml("admission:\n  trusted_uids: []\n", "f");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->admission.trusted_uids.empty());  // only each owner's own runs
}

TEST(ConfigFile, FleetHistoryIsOffByDefaultAndReadsItsKeys) {
  EXPECT_TRUE(default_config().admission.history.prometheus_url.empty());
  EXPECT_EQ(default_config().admission.history.timeout, std::chrono::milliseconds(500));
  auto c = parse_config_yaml(
      "admission:\n  history:\n    prometheus_url: http://prom:9090/\n    lookback: 168h\n"
      "    timeout: 250ms\n    cache_ttl: 1m\n    token_file: /etc/ramguard/prom.token\n",
      "f");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->admission.history.prometheus_url, "http://prom:9090/");
  EXPECT_EQ(c->admission.history.lookback, std::chrono::hours(168));
  EXPECT_EQ(c->admission.history.timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(c->admission.history.cache_ttl, std::chrono::minutes(1));
  EXPECT_EQ(c->admission.history.token_file, "/etc/ramguard/prom.token");
}

TEST(ConfigFile, MessagesStartWithThePath) {
  TempDir dir;
  const auto path = dir.write("bad.yaml", "\n\nbudget: 4 GBs\n");
  auto c = load_config_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, ::testing::StartsWith(path.string() + ":3: budget: invalid size"));
}

TEST(ConfigFile, MissingFile) {
  TempDir dir;
  auto c = load_config_file(dir.path() / "nope.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("config file '" + (dir.path() / "nope.yaml").string()));
  EXPECT_THAT(c.error().message, HasSubstr("No such file or directory"));
}

TEST(ConfigFile, Directory) {
  TempDir dir;
  auto c = load_config_file(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr(dir.path().string()));
  EXPECT_THAT(c.error().message, HasSubstr("is a directory"));
}

TEST(ConfigFile, FifoIsNotARegularFile) {
  TempDir dir;
  const auto fifo = dir.path() / "fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto c = load_config_file(fifo);  // must not block waiting for a writer
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("is not a regular file"));
}

TEST(ConfigFile, OversizedFile) {
  TempDir dir;
  auto c = load_config_file(dir.write("big.yaml", std::string(2 * 1024 * 1024, '#')));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("larger than 1048576 bytes"));
}

// Root reads any file, so as root the read is attempted by a child that has dropped to nobody.
std::string load_as_unprivileged(const std::filesystem::path& path) {
  if (::geteuid() != 0) {
    auto c = load_config_file(path);
    return c.ok() ? "loaded" : c.error().message;
  }
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string out = "setuid failed";
    if (::setgid(65534) == 0 && ::setuid(65534) == 0) {
      auto c = load_config_file(path);
      out = c.ok() ? "loaded" : c.error().message;
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return out;
}

TEST(ConfigFile, PermissionDenied) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const auto path = dir.write("secret.yaml", "budget: 4GB\n");
  ASSERT_EQ(::chmod(path.c_str(), 0000), 0);
  const std::string message = load_as_unprivileged(path);
  EXPECT_THAT(message, HasSubstr("config file '" + path.string() + "': cannot read"));
  EXPECT_THAT(message, HasSubstr("Permission denied"));
}

TEST(ConfigReload, GoodFileIsAdoptedAndFlagsStillWin) {
  TempDir dir;
  const auto path = dir.write("r.yaml", "budget: 4GB\nsampling: { interval: 5s }\n");
  Config current = default_config();
  CommandLine flags;
  flags.interval = std::chrono::seconds(1);
  std::vector<std::string> notes;
  auto next = reload(current, path, flags, &notes);
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->budget_bytes, 4'000'000'000u);
  EXPECT_EQ(next->sampling.interval, std::chrono::seconds(1));  // the flag, not the file
  EXPECT_TRUE(notes.empty());
}

TEST(ConfigReload, BadFileLeavesTheRunningConfigUntouched) {
  TempDir dir;
  const auto path = dir.write("r.yaml", "budget: 4GB\ngrowth: { min_bytes: 5 GBs }\n");
  Config current = default_config();
  current.budget_bytes = 9'000'000'000;
  const Config before = current;
  auto next = reload(current, path);
  ASSERT_FALSE(next.ok());
  EXPECT_THAT(next.error().message, HasSubstr("growth.min_bytes: invalid size '5 GBs'"));
  EXPECT_EQ(current, before);
  auto missing = reload(current, dir.path() / "gone.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("No such file"));
  EXPECT_EQ(current, before);
}

// The running daemon as a packaged file sets it up: stricter than the defaults.
Config hardened() {
  Config c = default_config();
  c.budget_bytes = 8'000'000'000;
  c.admission.max_reserved_per_user_bytes = 2'000'000'000;
  c.admission.max_reserved_per_user_fraction = 0;
  c.admission.max_active_runs_per_user = 4;
  c.admission.lease = std::chrono::minutes(10);
  c.metrics.job_names = JobNames::kOmit;
  return c;
}

// A truncated file that is still valid YAML: every key after the cut would go to its default.
TEST(ConfigReload, AFileThatWeakensTheGuardOnlyByOmissionIsRefusedNamingEachKey) {
  TempDir dir;
  const Config running = hardened();
  const auto path = dir.write("r.yaml", "sampling: { interval: 5s }\n");
  auto next = reload(running, path);
  ASSERT_FALSE(next.ok());
  const std::string why = next.error().message;
  EXPECT_THAT(why, HasSubstr("it would weaken the guard"));
  EXPECT_THAT(why, HasSubstr("admission.max_reserved_per_user is not in the file, which would "
                             "lower it from 2.00 GB to the default"));
  EXPECT_THAT(why, HasSubstr("admission.max_active_runs_per_user is not in the file"));
  EXPECT_THAT(why, HasSubstr("admission.lease is not in the file, which would lower it from 10m "
                             "to the default 1m"));
  EXPECT_THAT(why, HasSubstr("metrics.job_names is not in the file, which would lower it from "
                             "omit to the default hash"));
  EXPECT_THAT(why, HasSubstr("budget is not in the file, which would lower it from 8.00 GB to "
                             "the default 16.00 GB"));

  Config shared = running;
  shared.control.peers_read = PeersRead::kOwn;
  const auto all = dir.write(
      "all.yaml",
      "budget: 8GB\ncontrol: { peers_read: all }\nmetrics: { job_names: omit }\n"
      "admission: { lease: 10m, max_reserved_per_user: 2GB, max_active_runs_per_user: 4 }\n");
  auto named = reload(shared, all);  // every key named: meant, and applied
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->control.peers_read, PeersRead::kAll);
  const auto plain = dir.write(
      "plain.yaml",
      "budget: 16GB\nmetrics: { job_names: plain }\n"
      "admission: { lease: 1m, max_reserved_per_user: 0, max_active_runs_per_user: 0 }\n");
  auto off = reload(running, plain);  // turning everything off, said out loud
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(user_reserve_cap_bytes(off->admission, off->budget_bytes), 0u);
  EXPECT_EQ(off->metrics.job_names, JobNames::kPlain);
}

// The default cap is a share of the budget: a budget the file names moves it, and that is meant.
TEST(ConfigReload, ANamedBudgetMovesTheShareCapWithoutARefusal) {
  TempDir dir;
  Config running = default_config();
  running.budget_bytes = 8'000'000'000;
  auto next = reload(running, dir.write("b.yaml", "budget: 12GiB\n"));
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(user_reserve_cap_bytes(next->admission, next->budget_bytes), (12ull << 30) * 3 / 4);
}

TEST(ConfigReload, AnEmptyFileAndABareBudgetUnder64MBAreRefused) {
  TempDir dir;
  const Config running = default_config();
  for (const char* text : {"", "\n", "# just a comment\n"}) {
    auto next = reload(running, dir.write("empty.yaml", text));
    ASSERT_FALSE(next.ok()) << "'" << text << "'";
    EXPECT_THAT(next.error().message, HasSubstr("the file is empty"));
  }
  auto tiny = reload(running, dir.write("tiny.yaml", "budget: 10\n"));
  ASSERT_FALSE(tiny.ok());
  EXPECT_THAT(tiny.error().message, HasSubstr("budget 10 is bytes, under 64 MB"));
  auto meant = reload(running, dir.write("meant.yaml", "budget: 32MB\n"));
  ASSERT_TRUE(meant.ok()) << meant.error().message;
  EXPECT_EQ(meant->budget_bytes, 32'000'000u);
}

TEST(ConfigReload, ListenersAndPathsNeedARestart) {
  TempDir dir;
  const auto path = dir.write("r.yaml",
                              "state_dir: /new/state\nmetrics: { listen: \"0.0.0.0:9000\" }\n"
                              "control: { socket: /new.sock, socket_mode: \"0600\" }\n"
                              "release: { grace: 45s }\n"
                              "store: { coalesce_wal_writes: false }\n");
  Config current = default_config();
  current.state_dir = "/old/state";
  current.control.socket = "/old.sock";
  std::vector<std::string> notes;
  auto next = reload(current, path, {}, &notes);
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->release.grace, std::chrono::seconds(45));  // applied
  EXPECT_EQ(next->state_dir, "/old/state");                  // kept
  EXPECT_EQ(next->control.socket, "/old.sock");
  EXPECT_EQ(next->control.socket_mode, 0660u);
  EXPECT_EQ(next->metrics.listen, current.metrics.listen);
  EXPECT_TRUE(next->store.coalesce_wal_writes);  // the open ledger keeps its VFS
  ASSERT_EQ(notes.size(), 5u);
  EXPECT_THAT(notes[0],
              HasSubstr("state_dir: '/old/state' -> '/new/state' takes effect after a restart"));
  EXPECT_THAT(notes[1], HasSubstr("control.socket: '/old.sock' -> '/new.sock'"));
  EXPECT_THAT(notes[2], HasSubstr("control.socket_mode: '0660' -> '0600'"));
  EXPECT_THAT(notes[3], HasSubstr("store.coalesce_wal_writes: 'true' -> 'false'"));
  EXPECT_THAT(notes[4], HasSubstr("metrics.listen: '127.0.0.1:9797' -> '0.0.0.0:9000'"));
}

TEST(ConfigReload, UnsetPathsInTheNewFileAreNoChange) {
  Config running = default_config();
  running.state_dir = "/var/lib/ramguard";
  running.control.socket = "/run/ramguard/ramguard.sock";
  EXPECT_TRUE(restart_required_changes(running, default_config()).empty());
}

}  // namespace
}  // namespace ramguard
