// status, runs, report and compare through the CLI, rendered by ramguard::report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "unit/cli/run_cli.hpp"
#include "unit/client/fake_server.hpp"

namespace ramguard {
namespace {

using test_support::FakeServer;
using ::testing::HasSubstr;

v1::RunStatus run_status(const std::string& id, std::uint64_t peak) {
  v1::RunStatus run;
  run.set_run_id(id);
  run.set_job("vit-h14");
  (*run.mutable_labels())["build"] = id == "r-1" ? "baseline" : "final";
  run.set_state("ended");
  run.set_peak_bytes(peak);
  run.mutable_baseline()->set_rss_bytes(500'000'000);
  run.set_started_unix_ms(1'700'000'000'000);
  run.set_ended_unix_ms(1'700'000'060'000);
  auto* phase = run.add_phases();
  phase->set_phase("aggregation");
  phase->set_round(1);
  phase->set_duration_seconds(6.75);
  phase->set_peak_bytes(peak);
  phase->set_peak_exact(true);
  return run;
}

v1::Reply views(const v1::Request& request) {
  v1::Reply reply;
  switch (request.command_case()) {
    case v1::Request::kStatus:
      reply.mutable_status()->set_budget_bytes(16'000'000'000);
      *reply.mutable_status()->add_runs() = run_status("r-1", 29'400'000'000);
      break;
    case v1::Request::kListRuns:
      *reply.mutable_list_runs()->add_runs() = run_status("r-1", 29'400'000'000);
      *reply.mutable_list_runs()->add_runs() = run_status("r-2", 9'600'000'000);
      break;
    case v1::Request::kReport: {
      *reply.mutable_report()->mutable_run() = run_status(request.report().run_id(), 9'600'000'000);
      if (request.report().include_samples()) {
        for (int i = 0; i < 30; ++i) {
          auto* s = reply.mutable_report()->add_samples();
          s->set_at_unix_ms(1'700'000'000'000 + i * 2000);
          s->set_rss_bytes(5'000'000'000 + static_cast<std::uint64_t>(i) * 100'000'000);
        }
      }
      break;
    }
    case v1::Request::kCompare:
      for (const std::string& id : request.compare().run_ids()) {
        auto* row = reply.mutable_compare()->add_rows();
        row->set_run_id(id);
        row->set_job("vit-h14");
        row->set_peak_bytes(id == "r-1" ? 29'400'000'000 : 9'600'000'000);
      }
      break;
    default:
      break;
  }
  return reply;
}

TEST(CliViews, StatusShowsTheBudgetInDecimalOrBinaryUnits) {
  FakeServer server(views);
  const Outcome o = run_cli({"--socket", server.path(), "status"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("16.00 GB"));
  const Outcome gib = run_cli({"--socket", server.path(), "status", "--gib"});
  EXPECT_THAT(gib.out, HasSubstr("14.90 GiB"));
}

TEST(CliViews, RunsListsEveryRun) {
  FakeServer server(views);
  const Outcome o = run_cli({"--socket", server.path(), "runs", "--limit", "5"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("r-1"));
  EXPECT_THAT(o.out, HasSubstr("r-2"));
  EXPECT_EQ(server.requests().at(0).list_runs().limit(), 5u);
}

TEST(CliViews, ReportAsTextJsonAndSvg) {
  FakeServer server(views);
  const Outcome text = run_cli({"--socket", server.path(), "report", "r-2"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("r-2"));
  EXPECT_THAT(text.out, HasSubstr("9.60 GB"));

  const Outcome json = run_cli({"--socket", server.path(), "report", "r-2", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.front(), '{');
  EXPECT_THAT(json.out, HasSubstr("\"r-2\""));

  const std::string svg = ::testing::TempDir() + "report-" + std::to_string(::getpid()) + ".svg";
  const Outcome chart = run_cli({"--socket", server.path(), "report", "r-2", "--svg", svg});
  EXPECT_EQ(chart.exit_code, 0) << chart.err;
  const std::string drawn = slurp(svg);
  std::filesystem::remove(svg);
  EXPECT_THAT(drawn, HasSubstr("<svg"));
  EXPECT_THAT(drawn, HasSubstr("</svg>"));
  EXPECT_THAT(drawn, HasSubstr("aggregation"));
  bool asked_for_samples = false;
  for (const v1::Request& r : server.requests()) {
    if (r.has_report() && r.report().include_samples()) asked_for_samples = true;
  }
  EXPECT_TRUE(asked_for_samples);
}

TEST(CliViews, AnUnwritableSvgPathIsAnError) {
  FakeServer server(views);
  const Outcome o =
      run_cli({"--socket", server.path(), "report", "r-2", "--svg", "/nonexistent-dir/x.svg"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("cannot write SVG file '/nonexistent-dir/x.svg'"));
}

TEST(CliViews, CompareInEveryFormat) {
  FakeServer server(views);
  const Outcome csv =
      run_cli({"--socket", server.path(), "compare", "r-1", "r-2", "--format", "csv"});
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr("r-1"));
  EXPECT_THAT(csv.out, HasSubstr("r-2"));
  EXPECT_THAT(csv.out, HasSubstr(","));
  const Outcome md =
      run_cli({"--socket", server.path(), "compare", "r-1", "r-2", "--format", "markdown"});
  EXPECT_THAT(md.out, HasSubstr("|"));
  const Outcome text = run_cli({"--socket", server.path(), "compare", "r-1", "r-2"});
  EXPECT_THAT(text.out, HasSubstr("29.40 GB"));
  const Outcome json = run_cli({"--socket", server.path(), "compare", "r-1", "r-2", "--json"});
  EXPECT_THAT(json.out, HasSubstr("\"r-1\""));
  EXPECT_NE(json.out.find('{'), std::string::npos);
}

}  // namespace
}  // namespace ramguard
