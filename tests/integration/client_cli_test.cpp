// What libramguard does also works from the shell: the built `ramguard` CLI against the real
// daemon. Runs are driven on a real process (memchild) or started by `ramguard exec` on a real
// command; the JSON outputs are parsed as the protocol's messages, the report JSON is validated
// against its schema and the SVG is parsed as XML by python3.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr double kTolerance = 4.0 * kMiB;

CommandResult cli(const Daemon& d, std::vector<std::string> args) {
  std::vector<std::string> argv{cli_path(), "--socket", d.socket_path().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The word after `prefix` in `text` ("reservation " -> the id).
std::string word_after(const std::string& text, const std::string& prefix) {
  const auto pos = text.find(prefix);
  if (pos == std::string::npos) return "";
  const auto start = pos + prefix.size();
  return text.substr(start, text.find_first_of(" \n:", start) - start);
}

template <typename Message>
Message parse_json(const std::string& text) {
  Message m;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &m);
  if (!status.ok()) ADD_FAILURE() << "not a " << m.GetTypeName() << ": " << text;
  return m;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// python3 running `script` with the given arguments (sys.argv[1:]).
CommandResult python(const std::string& script, std::vector<std::string> args) {
  std::vector<std::string> argv{"python3", "-c", script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

// A run on `child` driven entirely through the CLI: 2 rounds of aggregation (allocating
// `round_mib` MiB, freed before the end mark) and synchronization. Returns the run id.
std::string cli_run(const Daemon& d, MemChild& child, const std::string& job,
                    const std::string& label, std::uint64_t round_mib) {
  const auto started = cli(d, {"start", "--pid", std::to_string(child.pid()), "--job", job,
                               "--label", label, "--model-bytes", "32MiB", "--rounds", "2"});
  EXPECT_EQ(started.exit_code, 0) << started.output;
  const std::string run = trim(started.output);
  for (int round = 1; round <= 2; ++round) {
    EXPECT_EQ(cli(d, {"mark", run, "begin", "aggregation"}).exit_code, 0);
    child.command("alloc update " + std::to_string(round_mib * kMiB));
    child.command("free update");
    EXPECT_EQ(cli(d, {"mark", run, "end", "aggregation"}).exit_code, 0);
    EXPECT_EQ(cli(d, {"mark", run, "begin", "synchronization"}).exit_code, 0);
    EXPECT_EQ(cli(d, {"mark", run, "end", "synchronization"}).exit_code, 0);
    EXPECT_EQ(cli(d, {"round-end", run}).exit_code, 0);
  }
  const auto ended = cli(d, {"end", run});
  EXPECT_EQ(ended.exit_code, 0) << ended.output;
  return run;
}

TEST(ClientCli, AdmitStartMarkRoundEndStatusEnd) {
  auto d = Daemon::with_args({});
  MemChild child;
  const std::string pid = std::to_string(child.pid());

  const auto refused = cli(*d, {"admit", "--job", "cli-job", "--estimate", "100GB", "--pid", pid});
  EXPECT_EQ(refused.exit_code, 3) << refused.output;
  for (const char* term : {"refused", "baseline", "+ reserved", "+ estimate", "100.00 GB",
                           "budget - margin", "16.00 GB", "headroom"}) {
    EXPECT_NE(refused.output.find(term), std::string::npos) << term << "\n" << refused.output;
  }

  const auto admitted = cli(*d, {"admit", "--job", "cli-job", "--estimate", "1GB", "--pid", pid});
  EXPECT_EQ(admitted.exit_code, 0) << admitted.output;
  const std::string reservation = word_after(admitted.output, "admitted: reservation ");
  ASSERT_FALSE(reservation.empty()) << admitted.output;
  EXPECT_NE(admitted.output.find("1.00 GB"), std::string::npos) << admitted.output;

  // --json: the AdmitReply itself; this second reservation is given back with `release`.
  const auto admitted_json =
      cli(*d, {"--json", "admit", "--job", "cli-job", "--estimate", "500MB", "--pid", pid});
  EXPECT_EQ(admitted_json.exit_code, 0);
  const auto admit_reply = parse_json<v1::AdmitReply>(admitted_json.output);
  EXPECT_TRUE(admit_reply.admitted());
  EXPECT_EQ(admit_reply.estimate_bytes(), 500'000'000u);
  EXPECT_EQ(admit_reply.reserved_bytes(), 1'000'000'000u) << "the first reservation counts";
  const auto released = cli(*d, {"release", admit_reply.reservation_id()});
  EXPECT_EQ(released.exit_code, 0) << released.output;
  EXPECT_NE(released.output.find("0.50 GB"), std::string::npos) << released.output;

  const auto started = cli(*d, {"start", "--pid", pid, "--job", "cli-job", "--reservation",
                                reservation, "--label", "build=cli", "--rounds", "2"});
  ASSERT_EQ(started.exit_code, 0) << started.output;
  const std::string run = trim(started.output);
  ASSERT_FALSE(run.empty());
  EXPECT_EQ(run.find_first_of(" \n"), std::string::npos) << "start prints the run id alone";

  const auto begin = cli(*d, {"mark", run, "begin", "aggregation"});
  EXPECT_EQ(begin.exit_code, 0) << begin.output;
  EXPECT_NE(begin.output.find("phase aggregation began (round 1)"), std::string::npos)
      << begin.output;
  const std::uint64_t before = child.command("rss");
  child.command("alloc update " + std::to_string(64 * kMiB));
  child.command("free update");
  const auto end_json = cli(*d, {"--json", "mark", run, "end", "aggregation"});
  EXPECT_EQ(end_json.exit_code, 0) << end_json.output;
  const auto end_reply = parse_json<v1::MarkReply>(end_json.output);
  EXPECT_TRUE(end_reply.peak_exact());
  EXPECT_NEAR(static_cast<double>(end_reply.phase_peak_bytes()),
              static_cast<double>(before + 64 * kMiB), kTolerance);

  EXPECT_EQ(cli(*d, {"mark", run, "begin", "synchronization"}).exit_code, 0);
  const auto sync_end = cli(*d, {"mark", run, "end", "synchronization"});
  EXPECT_NE(sync_end.output.find("phase synchronization ended (round 1): peak "), std::string::npos)
      << sync_end.output;
  EXPECT_NE(sync_end.output.find("(exact)"), std::string::npos) << sync_end.output;

  const auto round1 = cli(*d, {"round-end", run});
  EXPECT_EQ(round1.exit_code, 0);
  EXPECT_NE(round1.output.find("round 1 ended: RSS "), std::string::npos) << round1.output;
  const auto round2 = cli(*d, {"--json", "round-end", run});
  EXPECT_EQ(parse_json<v1::MarkReply>(round2.output).round(), 2u) << round2.output;

  const auto status = cli(*d, {"status", run});
  EXPECT_EQ(status.exit_code, 0);
  EXPECT_NE(status.output.find(run), std::string::npos) << status.output;
  EXPECT_NE(status.output.find("cli-job"), std::string::npos) << status.output;
  const auto status_json = parse_json<v1::StatusReply>(cli(*d, {"--json", "status", run}).output);
  ASSERT_EQ(status_json.runs_size(), 1);
  const v1::RunStatus& s = status_json.runs(0);
  EXPECT_EQ(s.state(), "active");
  EXPECT_EQ(s.labels().at("build"), "cli");
  EXPECT_EQ(s.phases_size(), 2);
  EXPECT_EQ(s.boundaries_size(), 2);
  EXPECT_EQ(s.round(), 2u);
  // The listing says the same number of rounds as the status.
  const auto listed = parse_json<v1::ListRunsReply>(cli(*d, {"--json", "runs"}).output);
  ASSERT_EQ(listed.runs_size(), 1);
  EXPECT_EQ(listed.runs(0).run_id(), run);
  EXPECT_EQ(listed.runs(0).round(), 2u);
  EXPECT_EQ(s.phases(0).peak_bytes(), end_reply.phase_peak_bytes());
  ASSERT_EQ(status_json.reservations_size(), 1);
  EXPECT_EQ(status_json.reservations(0).run_id(), run);

  const auto ended = cli(*d, {"end", run});
  EXPECT_EQ(ended.exit_code, 0) << ended.output;
  EXPECT_NE(ended.output.find("run " + run + " ended: RSS "), std::string::npos) << ended.output;
  const auto again = cli(*d, {"end", run});
  EXPECT_EQ(again.exit_code, 1) << "a finished run cannot end twice";
  EXPECT_NE(again.output.find(run), std::string::npos) << again.output;
  EXPECT_EQ(parse_json<v1::StatusReply>(cli(*d, {"--json", "status"}).output).reserved_bytes(), 0u);
}

TEST(ClientCli, ExecRunsTheCommandUnderARunAndExitsWithItsStatus) {
  auto d = Daemon::with_args({"--interval", "100ms"});
  const auto dir = make_temp_dir("cli-exec");
  const auto env_file = dir / "env";

  // The child sees RAMGUARD_RUN and RAMGUARD_SOCKET, and a CLI inside it joins the run through
  // them alone (no --socket).
  const std::string script =
      "printf '%s %s\\n' \"$RAMGUARD_RUN\" \"$RAMGUARD_SOCKET\" > " + env_file.string() +
      " && \"$0\" mark \"$RAMGUARD_RUN\" begin load && \"$0\" mark \"$RAMGUARD_RUN\" end load";
  const auto ok = cli(
      *d, {"exec", "--job", "cli-exec", "--estimate", "1GB", "--", "sh", "-c", script, cli_path()});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  const std::string run = word_after(ok.output, "ramguard: run ");
  ASSERT_FALSE(run.empty()) << ok.output;
  EXPECT_EQ(read_file(env_file), run + " " + d->socket_path().string() + "\n");
  const auto runs = cli(*d, {"runs"});
  EXPECT_EQ(runs.exit_code, 0);
  EXPECT_NE(runs.output.find(run), std::string::npos) << runs.output;
  EXPECT_NE(runs.output.find("cli-exec"), std::string::npos) << runs.output;
  const auto text = cli(*d, {"report", run});
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("load"), std::string::npos) << "the child's own marks\n"
                                                         << text.output;

  // A real command that allocates: memchild, exec'ed by sh so it is the run's process.
  const auto commands = dir / "commands";
  std::ofstream(commands) << "alloc a " << 96 * kMiB << "\nsleep 800\nfree a\nexit 0\n";
  const auto mem = cli(*d, {"exec", "--job", "cli-exec", "--", "sh", "-c",
                            "exec \"$0\" < " + commands.string(), memchild_path()});
  EXPECT_EQ(mem.exit_code, 0) << mem.output;
  const std::string mem_run = word_after(mem.output, "ramguard: run ");
  ASSERT_FALSE(mem_run.empty()) << mem.output;
  const auto mem_status =
      parse_json<v1::StatusReply>(cli(*d, {"--json", "status", mem_run}).output);
  ASSERT_EQ(mem_status.runs_size(), 1);
  EXPECT_GE(mem_status.runs(0).peak_bytes(), 96 * kMiB) << "the guard watched the command";
  EXPECT_NE(mem_status.runs(0).state(), "active");

  const auto seven = cli(*d, {"exec", "--job", "cli-exec", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(seven.exit_code, 7) << seven.output;
  const auto killed = cli(*d, {"exec", "--job", "cli-exec", "--", "sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.exit_code, 137) << killed.output;
  const std::string killed_run = word_after(killed.output, "ramguard: run ");
  ASSERT_FALSE(killed_run.empty()) << killed.output;
  const auto killed_status =
      parse_json<v1::StatusReply>(cli(*d, {"--json", "status", killed_run}).output);
  ASSERT_EQ(killed_status.runs_size(), 1);
  EXPECT_EQ(killed_status.runs(0).state(), "exited");
  bool exited_verdict = false;
  for (const auto& v : killed_status.runs(0).verdicts()) exited_verdict |= v.kind() == "exited";
  EXPECT_TRUE(exited_verdict) << killed_status.DebugString();

  // Refused: exit 3 with the terms, and the command never runs.
  const auto marker = dir / "ran";
  const auto refused = cli(*d, {"exec", "--job", "cli-exec", "--estimate", "100GB", "--", "sh",
                                "-c", "touch " + marker.string()});
  EXPECT_EQ(refused.exit_code, 3) << refused.output;
  EXPECT_NE(refused.output.find("refused"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("100.00 GB"), std::string::npos) << refused.output;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a refused admission must not run CMD";
  // No reservation is left behind by any of them.
  EXPECT_EQ(parse_json<v1::StatusReply>(cli(*d, {"--json", "status"}).output).reserved_bytes(), 0u);
  std::filesystem::remove_all(dir);
}

// --allocator changes what CMD runs with, and says so in the run's labels.
TEST(ClientCli, ExecAllocatorPreloadsJemallocOrTunesGlibcAndLabelsTheRun) {
  auto d = Daemon::with_args({"--interval", "100ms"});
  const auto labels_of = [&](const CommandResult& exec) {
    const std::string run = word_after(exec.output, "ramguard: run ");
    EXPECT_FALSE(run.empty()) << exec.output;
    const auto status = parse_json<v1::StatusReply>(cli(*d, {"--json", "status", run}).output);
    EXPECT_EQ(status.runs_size(), 1) << exec.output;
    return status.runs_size() == 1 ? status.runs(0).labels()
                                   : google::protobuf::Map<std::string, std::string>{};
  };
  // grep's own memory map: jemalloc is there only when preloaded (grep exits 1 otherwise).
  const std::vector<std::string> jemalloc_mapped{"sh", "-c", "grep -q libjemalloc /proc/$$/maps"};
  auto args = [](std::vector<std::string> head, const std::vector<std::string>& cmd) {
    head.push_back("--");
    head.insert(head.end(), cmd.begin(), cmd.end());
    return head;
  };
  const auto plain = cli(*d, args({"exec", "--job", "alloc"}, jemalloc_mapped));
  EXPECT_EQ(plain.exit_code, 1) << "jemalloc mapped without --allocator?\n" << plain.output;
  EXPECT_EQ(labels_of(plain).count("allocator"), 0u);

  const auto jemalloc =
      cli(*d, args({"exec", "--job", "alloc", "--allocator", "jemalloc"}, jemalloc_mapped));
  EXPECT_EQ(jemalloc.exit_code, 0) << jemalloc.output;
  EXPECT_EQ(labels_of(jemalloc).at("allocator"), "jemalloc");

  const auto tuned =
      cli(*d, {"exec", "--job", "alloc", "--allocator", "glibc-tuned", "--", "sh", "-c",
               "test \"$MALLOC_ARENA_MAX $MALLOC_MMAP_THRESHOLD_ "
               "$MALLOC_TRIM_THRESHOLD_\" = '1 1048576 134217728'"});
  EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_EQ(labels_of(tuned).at("allocator"), "glibc-tuned");

  // Unknown names and contradicting labels are usage errors naming the value; nothing runs.
  const auto dir = make_temp_dir("cli-alloc");
  const auto marker = dir / "ran";
  const auto bad = cli(*d, {"exec", "--allocator", "tcmalloc", "--", "touch", marker.string()});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("'tcmalloc' is not known"), std::string::npos) << bad.output;
  const auto contradiction = cli(*d, {"exec", "--allocator", "jemalloc", "--label",
                                      "allocator=glibc", "--", "touch", marker.string()});
  EXPECT_NE(contradiction.exit_code, 0);
  EXPECT_NE(contradiction.output.find("contradicts"), std::string::npos) << contradiction.output;
  EXPECT_FALSE(std::filesystem::exists(marker));
  std::filesystem::remove_all(dir);
}

TEST(ClientCli, ReportJsonSvgAndCompareInEveryFormat) {
  auto d = Daemon::with_config("growth:\n  settle: 100ms\n");
  MemChild child;
  const std::string r1 = cli_run(*d, child, "cli-cmp", "build=first", 64);
  const std::string r2 = cli_run(*d, child, "cli-cmp", "build=second", 32);
  const auto dir = make_temp_dir("cli-report");

  const auto text = cli(*d, {"report", r1});
  EXPECT_EQ(text.exit_code, 0) << text.output;
  // Sizes print with their unit: a 64 MiB run's figures, thresholds included, are in MB.
  for (const std::string& needle : {r1, std::string("cli-cmp"), std::string("aggregation"),
                                    std::string("synchronization"), std::string(" MB")}) {
    EXPECT_NE(text.output.find(needle), std::string::npos) << needle << "\n" << text.output;
  }

  const auto json = cli(*d, {"report", r1, "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.output;
  const auto json_file = dir / "report.json";
  std::ofstream(json_file) << json.output;
  const auto valid = python(
      "import json, sys, jsonschema\n"
      "report = json.load(open(sys.argv[1]))\n"
      "jsonschema.validate(report, json.load(open(sys.argv[2])))\n"
      "assert report['run']['run_id'] == sys.argv[3], report['run']\n"
      "phases = [p['phase'] for p in report['phases']]\n"
      "assert phases.count('aggregation') == 2, phases\n"
      "assert len(report['boundaries']) == 2, report['boundaries']\n",
      {json_file.string(), std::string(RAMGUARD_SOURCE_DIR) + "/client/report/report.schema.json",
       r1});
  EXPECT_EQ(valid.exit_code, 0) << valid.output;

  const auto svg_file = dir / "r1.svg";
  const auto svg = cli(*d, {"report", r1, "--svg", svg_file.string()});
  EXPECT_EQ(svg.exit_code, 0) << svg.output;
  const auto parsed = python(
      "import sys, xml.etree.ElementTree as E\n"
      "root = E.parse(sys.argv[1]).getroot()\n"
      "assert root.tag.endswith('svg'), root.tag\n"
      "text = open(sys.argv[1]).read()\n"
      "assert 'aggregation' in text and 'synchronization' in text\n",
      {svg_file.string()});
  EXPECT_EQ(parsed.exit_code, 0) << parsed.output;

  const auto markdown = cli(*d, {"compare", r1, r2, "--format", "markdown"});
  EXPECT_EQ(markdown.exit_code, 0) << markdown.output;
  EXPECT_EQ(markdown.output.rfind("| run", 0), 0u) << markdown.output;
  EXPECT_NE(markdown.output.find("peak RAM"), std::string::npos) << markdown.output;
  EXPECT_NE(markdown.output.find("| " + r1 + " "), std::string::npos) << markdown.output;
  EXPECT_NE(markdown.output.find("| " + r2 + " "), std::string::npos) << markdown.output;

  const auto csv = cli(*d, {"compare", r1, r2, "--format", "csv"});
  EXPECT_EQ(csv.exit_code, 0) << csv.output;
  std::istringstream lines(csv.output);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 3u) << csv.output;
  EXPECT_EQ(rows[0].rfind("run,job,", 0), 0u) << rows[0];
  EXPECT_EQ(rows[1].rfind(r1 + ",cli-cmp,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind(r2 + ",cli-cmp,", 0), 0u) << rows[2];

  const auto compare_json = cli(*d, {"compare", r1, r2, "--format", "json"});
  EXPECT_EQ(compare_json.exit_code, 0) << compare_json.output;
  const auto compare_file = dir / "compare.json";
  std::ofstream(compare_file) << compare_json.output;
  const auto rows_ok = python(
      "import json, sys\n"
      "rows = json.load(open(sys.argv[1]))['rows']\n"
      "assert [r['run_id'] for r in rows] == sys.argv[2:4], rows\n"
      "assert rows[0]['peak_bytes'] > rows[1]['peak_bytes'], rows\n"
      "assert all(r['first_floor_bytes'] > 0 and r['last_floor_bytes'] > 0 for r in rows), rows\n"
      "assert [r['labels']['build'] for r in rows] == ['first', 'second'], rows\n",
      {compare_file.string(), r1, r2});
  EXPECT_EQ(rows_ok.exit_code, 0) << rows_ok.output;

  // By job: --job NAME, and --label job=NAME as people write it; a job without runs says so.
  for (const std::vector<std::string>& query :
       {std::vector<std::string>{"compare", "--job", "cli-cmp"},
        std::vector<std::string>{"compare", "--label", "job=cli-cmp"}}) {
    const auto by_job = cli(*d, query);
    EXPECT_EQ(by_job.exit_code, 0) << by_job.output;
    EXPECT_NE(by_job.output.find(r1), std::string::npos) << by_job.output;
    EXPECT_NE(by_job.output.find(r2), std::string::npos) << by_job.output;
  }
  const auto by_job_and_label = cli(*d, {"compare", "--job", "cli-cmp", "--label", "build=second"});
  EXPECT_EQ(by_job_and_label.exit_code, 0) << by_job_and_label.output;
  EXPECT_EQ(by_job_and_label.output.find(r1), std::string::npos) << by_job_and_label.output;
  EXPECT_NE(by_job_and_label.output.find(r2), std::string::npos) << by_job_and_label.output;
  const auto none = cli(*d, {"compare", "--job", "no-such-job"});
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("compare: no runs match --job no-such-job"), std::string::npos)
      << none.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ramguard::testing
