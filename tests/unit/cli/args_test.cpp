// The CLI's argument parsing: every subcommand's options into values, every bad input into a
// message that names it.
#include "args.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "subcommands.hpp"

namespace ramguard::cli {
namespace {

using ::testing::HasSubstr;

Invocation parse_ok(std::vector<std::string> args) {
  const ParseOutcome outcome = parse_args(args);
  EXPECT_TRUE(outcome.invocation.has_value()) << outcome.error;
  return outcome.invocation.value_or(Invocation{});
}

TEST(CliArgs, GlobalOptionsBeforeAndAfterTheSubcommand) {
  const Invocation a = parse_ok({"--socket", "/s.sock", "--timeout=500ms", "status", "--json"});
  EXPECT_EQ(a.global.socket_path, "/s.sock");
  EXPECT_EQ(a.global.timeout, std::chrono::milliseconds(500));
  EXPECT_TRUE(a.global.json);
  EXPECT_FALSE(a.global.binary_units);
  ASSERT_TRUE(std::holds_alternative<StatusArgs>(a.command));
  EXPECT_EQ(std::get<StatusArgs>(a.command).run_id, "");

  const Invocation b = parse_ok({"status", "r-1", "--socket=/t.sock", "--gib"});
  EXPECT_EQ(b.global.socket_path, "/t.sock");
  EXPECT_TRUE(b.global.binary_units);
  EXPECT_EQ(b.global.timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(std::get<StatusArgs>(b.command).run_id, "r-1");
}

TEST(CliArgs, AdmitWithAnEstimate) {
  const auto a = std::get<AdmitArgs>(
      parse_ok({"admit", "--job", "vit", "--estimate", "11.1GB", "--hosts", "2", "--pid", "77"})
          .command);
  EXPECT_EQ(a.job, "vit");
  EXPECT_EQ(a.estimate_bytes, 11'100'000'000u);
  EXPECT_EQ(a.hosts, 2u);
  EXPECT_EQ(a.pid, 77u);
  EXPECT_FALSE(a.use_calibrated);
}

TEST(CliArgs, AdmitWithAModelAndAPlan) {
  const auto a = std::get<AdmitArgs>(
      parse_ok({"admit", "--plan", "fedavg", "--model-bytes", "2.5GB", "--hosts", "2"}).command);
  EXPECT_EQ(a.plan, "fedavg");
  EXPECT_EQ(a.model_bytes, 2'500'000'000u);
  EXPECT_EQ(a.estimate_bytes, 0u);
  const auto b = std::get<AdmitArgs>(
      parse_ok({"admit", "--plan", "fedavg", "--params", "632000000", "--bytes-per-param", "4"})
          .command);
  EXPECT_EQ(b.parameter_count, 632'000'000u);
  EXPECT_DOUBLE_EQ(b.bytes_per_parameter, 4.0);
  const auto c =
      std::get<AdmitArgs>(parse_ok({"admit", "--job", "vit", "--use-calibrated"}).command);
  EXPECT_TRUE(c.use_calibrated);
}

TEST(CliArgs, StartGuardsItselfOnlyWhenAsked) {
  EXPECT_EQ(std::get<StartArgs>(parse_ok({"start", "--self"}).command).pid, 0u);
}

TEST(CliArgs, StartCollectsLabels) {
  const auto a =
      std::get<StartArgs>(parse_ok({"start", "--pid", "123", "--job", "vit", "--label",
                                    "build=final", "--label", "host=a=b", "--model-bytes", "2.5GB",
                                    "--rounds", "3", "--hosts", "2", "--reservation", "res-1"})
                              .command);
  EXPECT_EQ(a.pid, 123u);
  EXPECT_EQ(a.labels.size(), 2u);
  EXPECT_EQ(a.labels.at("build"), "final");
  EXPECT_EQ(a.labels.at("host"), "a=b");  // the first '=' splits
  EXPECT_EQ(a.model_bytes, 2'500'000'000u);
  EXPECT_EQ(a.rounds, 3u);
  EXPECT_EQ(a.reservation_id, "res-1");
}

TEST(CliArgs, MarksAndRoundEnds) {
  const auto m = std::get<MarkArgs>(parse_ok({"mark", "r-1", "end", "aggregation"}).command);
  EXPECT_EQ(m.run_id, "r-1");
  EXPECT_FALSE(m.begin);
  EXPECT_EQ(m.phase, "aggregation");
  const auto r = std::get<RoundEndArgs>(parse_ok({"round-end", "r-1", "--round", "4"}).command);
  EXPECT_EQ(r.round, 4u);
  EXPECT_EQ(std::get<EndArgs>(parse_ok({"end", "r-2"}).command).run_id, "r-2");
  EXPECT_EQ(std::get<ReleaseArgs>(parse_ok({"release", "res-3"}).command).reservation_id, "res-3");
}

TEST(CliArgs, ExecTakesTheCommandAfterTheDashes) {
  const auto e =
      std::get<ExecArgs>(parse_ok({"exec", "--job", "vit", "--estimate", "11GB", "--label",
                                   "build=final", "--", "python3", "-c", "print(1)", "--json"})
                             .command);
  EXPECT_TRUE(e.admission);
  EXPECT_EQ(e.admit.estimate_bytes, 11'000'000'000u);
  EXPECT_EQ(e.labels.at("build"), "final");
  EXPECT_EQ(e.command, (std::vector<std::string>{"python3", "-c", "print(1)", "--json"}));

  const auto f = std::get<ExecArgs>(parse_ok({"exec", "sleep", "1"}).command);
  EXPECT_FALSE(f.admission);  // no estimate: run without admission
  EXPECT_EQ(f.command, (std::vector<std::string>{"sleep", "1"}));
}

TEST(CliArgs, ReportsAndComparisons) {
  const Invocation r = parse_ok({"report", "r-1", "--svg", "/tmp/r.svg", "--gib", "--json"});
  EXPECT_EQ(std::get<ReportArgs>(r.command).svg_path, "/tmp/r.svg");
  EXPECT_TRUE(r.global.binary_units);
  EXPECT_TRUE(r.global.json);
  EXPECT_EQ(
      std::get<ReportArgs>(parse_ok({"report", "r-1", "--html", "/tmp/r.html"}).command).html_path,
      "/tmp/r.html");
  const auto ui = std::get<UiArgs>(parse_ok({"ui"}).command);
  EXPECT_EQ(ui.host, "127.0.0.1");  // loopback unless asked
  EXPECT_EQ(ui.port, 0);
  EXPECT_EQ(ui.refresh_ms, 2000u);
  const auto ui2 =
      std::get<UiArgs>(parse_ok({"ui", "--listen", "0.0.0.0:8080", "--refresh", "5s"}).command);
  EXPECT_EQ(ui2.host, "0.0.0.0");
  EXPECT_EQ(ui2.port, 8080);
  EXPECT_EQ(ui2.refresh_ms, 5000u);
  const auto c =
      std::get<CompareArgs>(parse_ok({"compare", "r-1", "r-2", "--format", "markdown"}).command);
  EXPECT_EQ(c.run_ids, (std::vector<std::string>{"r-1", "r-2"}));
  EXPECT_EQ(c.format, CompareFormat::kMarkdown);
  // The job is not a label: --label job=NAME means --job NAME.
  const auto d =
      std::get<CompareArgs>(parse_ok({"compare", "--label", "job=vit", "--json"}).command);
  EXPECT_EQ(d.job, "vit");
  EXPECT_TRUE(d.labels.empty());
  EXPECT_EQ(d.format, CompareFormat::kJson);
  const auto e = std::get<CompareArgs>(
      parse_ok({"compare", "--job", "vit", "--label", "build=final"}).command);
  EXPECT_EQ(e.job, "vit");
  EXPECT_EQ(e.labels.at("build"), "final");
  EXPECT_EQ(std::get<RunsArgs>(parse_ok({"runs", "--limit", "5"}).command).limit, 5u);
  const auto runs = std::get<RunsArgs>(
      parse_ok({"runs", "--label", "slurm_job_id=42", "--label", "slurm_step_id=0"}).command);
  EXPECT_EQ(runs.labels.at("slurm_job_id"), "42");
  EXPECT_EQ(runs.labels.at("slurm_step_id"), "0");
}

TEST(CliArgs, VersionBeforeOrAfterASubcommand) {
  EXPECT_TRUE(std::holds_alternative<VersionArgs>(parse_ok({"--version"}).command));
  EXPECT_TRUE(std::holds_alternative<VersionArgs>(parse_ok({"--json", "--version"}).command));
  EXPECT_TRUE(std::holds_alternative<VersionArgs>(parse_ok({"hello", "--version"}).command));
  const ParseOutcome bad = parse_args({"--version=1"});
  EXPECT_FALSE(bad.invocation.has_value());
  EXPECT_THAT(bad.error, HasSubstr("--version of ramguard takes no value"));
}

TEST(CliArgs, HelpForEverythingAndForOneCommand) {
  EXPECT_EQ(std::get<HelpArgs>(parse_ok({"--help"}).command).topic, "");
  EXPECT_EQ(std::get<HelpArgs>(parse_ok({"admit", "--help"}).command).topic, "admit");
  EXPECT_EQ(std::get<HelpArgs>(parse_ok({"help", "exec"}).command).topic, "exec");
  EXPECT_THAT(usage_text("exec"), HasSubstr("128+N"));
  EXPECT_THAT(usage_text(), HasSubstr("compare"));
}

// The table is the one home of a subcommand: each alternative of Command has exactly one row,
// every row is listed in the overview and has its own help, and a help topic parses back to it.
TEST(CliArgs, TheSubcommandTableHasOneRowPerCommandWithItsHelp) {
  std::set<std::size_t> indexes;
  for (const Subcommand& sub : subcommands()) {
    EXPECT_TRUE(indexes.insert(sub.command_index).second) << sub.name << " shares its Args type";
    EXPECT_THAT(std::string(sub.help),
                ::testing::StartsWith("usage: ramguard " + std::string(sub.name)));
    EXPECT_THAT(usage_text(), HasSubstr("  " + std::string(sub.synopsis)));
    EXPECT_EQ(std::get<HelpArgs>(parse_ok({"help", std::string(sub.name)}).command).topic,
              sub.name);
  }
  EXPECT_EQ(indexes.size(), std::variant_size_v<Command>);
  EXPECT_TRUE(std::holds_alternative<VersionArgs>(parse_ok({"version"}).command));
}

TEST(CliArgs, EveryBadInputGetsAMessageNamingIt) {
  const struct {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{}, "missing subcommand"},
      {{"frobnicate"}, "unknown subcommand 'frobnicate'"},
      {{"--bogus", "status"}, "unknown option '--bogus'"},
      {{"--socket"}, "option --socket of ramguard needs a value"},
      {{"--socket="}, "--socket must not be empty"},
      {{"--timeout", "5", "status"}, "invalid duration '5'"},
      {{"--timeout", "0s", "status"}, "must be positive"},
      {{"status", "--limit", "3"}, "unknown option '--limit' for ramguard status"},
      {{"status", "a", "b"}, "unexpected argument 'b'"},
      {{"hello", "extra"}, "unexpected argument 'extra'"},
      {{"admit"}, "needs an estimate"},
      {{"admit", "--estimate"}, "--estimate of ramguard admit needs a value"},
      {{"admit", "--estimate", "16gb"}, "invalid size '16gb'"},
      {{"admit", "--estimate", "-1GB"}, "invalid size '-1GB'"},
      {{"admit", "--estimate", "1GB", "--estimate", "2GB"}, "--estimate given twice"},
      {{"admit", "--estimate", "1GB", "--plan", "p", "--model-bytes", "1GB"}, "not both"},
      {{"admit", "--model-bytes", "1GB"}, "needs --plan"},
      {{"admit", "--plan", "fedavg"}, "--plan needs the model"},
      {{"admit", "--plan", "p", "--params", "10"}, "--params and --bytes-per-param go together"},
      {{"admit", "--plan", "p", "--params", "10", "--bytes-per-param", "0"}, "positive number"},
      {{"admit", "--plan", "p", "--params", "1", "--bytes-per-param", "4", "--model-bytes", "1GB"},
       "not both"},
      {{"admit", "--use-calibrated"}, "--use-calibrated needs --job"},
      {{"admit", "--use-calibrated=yes", "--job", "x"}, "takes no value"},
      {{"admit", "--estimate", "1GB", "--hosts", "-2"}, "--hosts: invalid number '-2'"},
      {{"admit", "--estimate", "1GB", "-x"}, "unknown option '-x'"},
      {{"admit", "--estimate", "1GB", "--hosts", "x"}, "--hosts: invalid number 'x'"},
      {{"admit", "--estimate", "1GB", "--pid", "99999999999"}, "from 0 to 4294967295"},
      {{"admit", "--estimate", "1GB", "--job", ""}, "--job must not be empty"},
      {{"start", "--label", "novalue"}, "--label 'novalue': expected KEY=VALUE"},
      {{"start", "--job", "vit"}, "ramguard start needs --pid PID"},
      {{"start", "--pid", "1", "--self"}, "--pid and --self exclude each other"},
      {{"list"}, "unknown subcommand 'list' (did you mean 'runs'?)"},
      {{"lst"}, "unknown subcommand 'lst' (did you mean 'runs'?)"},
      {{"reprot", "r-1"}, "unknown subcommand 'reprot' (did you mean 'report'?)"},
      {{"--sockt", "/tmp/s", "hello"},
       "unknown option '--sockt' for ramguard (did you mean "
       "'--socket'?)"},
      {{"hello", "--sockt=/tmp/s"}, "(did you mean '--socket'?)"},
      {{"admit", "--estimat", "1GB"}, "(did you mean '--estimate'?)"},
      {{"compare", "--label", "job=a", "--job", "b"}, "--label job=a contradicts --job b"},
      {{"start", "--label", "=v"}, "expected KEY=VALUE"},
      {{"start", "--label", "a=1", "--label", "a=2"}, "key 'a' given twice"},
      {{"start", "--rounds", "3.5"}, "invalid number '3.5'"},
      {{"mark", "r-1", "begin"}, "needs RUN begin|end PHASE"},
      {{"mark", "r-1", "start", "load"}, "'start' is neither begin nor end"},
      {{"mark", "r-1", "begin", "Load Phase"}, "invalid phase 'Load Phase'"},
      {{"mark", "r-1", "begin", std::string(65, 'a')}, "1 to 64 characters"},
      {{"round-end"}, "ramguard round-end needs RUN"},
      {{"round-end", "r-1", "--round", "x"}, "--round: invalid number 'x'"},
      {{"end"}, "ramguard end needs RUN"},
      {{"release"}, "needs RESERVATION"},
      {{"exec", "--job", "vit"}, "ramguard exec needs a command"},
      {{"exec", "--estimate", "1GB", "--"}, "needs a command"},
      {{"exec", "--plan", "fedavg", "--", "true"}, "--plan needs the model"},
      {{"report"}, "ramguard report needs RUN"},
      {{"report", "r-1", "--svg"}, "--svg of ramguard report needs a value"},
      {{"report", "r-1", "--html"}, "--html of ramguard report needs a value"},
      {{"ui", "--listen", ":80"}, "needs a host"},
      {{"ui", "--listen", "127.0.0.1:70000"}, "port:"},
      {{"ui", "--refresh", "10ms"}, "between 500ms and 1h"},
      {{"ui", "extra"}, "ramguard ui"},
      {{"compare"}, "needs run ids, --job NAME or --label"},
      {{"compare", "r-1", "--format", "html"}, "--format 'html': expected text, markdown"},
      {{"compare", "r-1", "--format", "csv", "--json"}, "--json contradicts --format csv"},
      {{"runs", "--limit", "many"}, "invalid number 'many'"},
      {{"status", "--", "x"}, "takes no command after --"},
  };
  for (const auto& c : cases) {
    const ParseOutcome outcome = parse_args(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_FALSE(outcome.invocation.has_value()) << joined;
    EXPECT_THAT(outcome.error, HasSubstr(c.message)) << joined;
  }
}

}  // namespace
}  // namespace ramguard::cli
