// The run page's pure parts: the bound on what one run's page holds (peaks kept), the export's
// hashes and inert data, the routes behind the token, and SHA-256 against FIPS 180-4 vectors.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "../report/fixtures.hpp"
#include "web/page.hpp"
#include "web/server.hpp"
#include "web/sha256.hpp"

namespace ramguard::web {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Sha256, MatchesTheStandardVectors) {
  EXPECT_EQ(sha256_base64(""), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  EXPECT_EQ(sha256_base64("abc"), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  // 56 bytes: the padding needs a second block.
  EXPECT_EQ(sha256_base64("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE=");
  EXPECT_EQ(sha256_base64(std::string(1000, 'a')), "Qe3s5C1j6Nm/UVqbppMuHCDLyfWl0TRkWttdsblzfqM=");
}

// A long run: 5,000 samples, 3,000 phases, 1,000 round ends; one phase, one sample and one
// floor in the middle are far above the rest.
v1::ReportReply long_run() {
  v1::ReportReply r;
  v1::RunStatus& run = *r.mutable_run();
  run.set_run_id("r-long");
  run.set_job("long");
  run.set_state("active");
  for (int i = 0; i < 5000; ++i) {
    auto* s = r.add_samples();
    s->set_at_unix_ms(1000 + i * 100);
    const std::uint64_t rss = i == 2345 ? 9'000'000'000 : 1'000'000'000 + (i % 7) * 1000;
    s->set_rss_bytes(rss);
    s->set_min_rss_bytes(rss);
    s->set_max_rss_bytes(rss);
  }
  for (int i = 0; i < 3000; ++i) {
    auto* p = run.add_phases();
    p->set_round(static_cast<std::uint32_t>(i / 3));
    p->set_phase(i % 3 == 0 ? "load" : i % 3 == 1 ? "aggregation" : "synchronization");
    p->set_begin_seconds(i * 0.1);
    p->set_duration_seconds(0.05);
    p->set_peak_bytes(i == 1501 ? 8'000'000'000 : 2'000'000'000 + static_cast<std::uint64_t>(i));
  }
  for (int i = 0; i < 1000; ++i) {
    auto* b = run.add_boundaries();
    b->set_round(static_cast<std::uint32_t>(i + 1));
    b->set_floor_bytes(i == 600 ? 7'000'000'000 : 1'000'000'000);
  }
  return r;
}

TEST(BoundedReport, KeepsWithinLimitsWithItsPeaksAndOrder) {
  Omitted omitted;
  const v1::ReportReply b = bounded_report(long_run(), PageLimits{}, omitted);
  EXPECT_LE(b.samples_size(), 1200);
  EXPECT_LE(b.run().phases_size(), 600);
  EXPECT_LE(b.run().boundaries_size(), 400);
  EXPECT_EQ(omitted.samples, 5000u - static_cast<std::size_t>(b.samples_size()));
  EXPECT_EQ(omitted.phases, 3000u - static_cast<std::size_t>(b.run().phases_size()));
  std::uint64_t max_rss = 0;
  for (const auto& s : b.samples()) max_rss = std::max(max_rss, s.max_rss_bytes());
  EXPECT_EQ(max_rss, 9'000'000'000u);  // the bucket keeps its maximum
  std::uint64_t max_phase = 0;
  double last_begin = -1;
  for (const auto& p : b.run().phases()) {
    max_phase = std::max(max_phase, p.peak_bytes());
    EXPECT_GT(p.begin_seconds(), last_begin);  // in their order
    last_begin = p.begin_seconds();
  }
  EXPECT_EQ(max_phase, 8'000'000'000u);
  EXPECT_EQ(b.run().phases(b.run().phases_size() - 1).begin_seconds(), 2999 * 0.1);  // newest
  const auto& floors = b.run().boundaries();
  EXPECT_EQ(floors.begin()->round(), 1u);
  EXPECT_EQ(floors.rbegin()->round(), 1000u);
  EXPECT_TRUE(std::any_of(floors.begin(), floors.end(),
                          [](const auto& f) { return f.floor_bytes() == 7'000'000'000; }));
}

TEST(BoundedReport, LeavesASmallRunAsItIs) {
  const v1::ReportReply r = report::testing::design_report(report::testing::design_build(0));
  Omitted omitted;
  const v1::ReportReply b = bounded_report(r, PageLimits{}, omitted);
  // Equal as messages (a map's serialized order is not fixed).
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(b, r));
  EXPECT_EQ(omitted.samples + omitted.phases + omitted.boundaries + omitted.verdicts, 0u);
}

TEST(RunJson, CarriesTheReportAndTheGrowthFromItsVerdict) {
  const v1::ReportReply r = report::testing::design_report(report::testing::design_build(0));
  PageContext context;
  context.budget_bytes = 16'000'000'000;
  const std::string json = run_json(r, context);
  EXPECT_THAT(json, HasSubstr("\"schema\":\"ramguard.page.run/1\""));
  EXPECT_THAT(json, HasSubstr("\"report\":{\"schema\":\"ramguard.report/1\""));
  EXPECT_THAT(json, HasSubstr("\"budget_bytes\":16000000000"));
  EXPECT_THAT(json, Not(HasSubstr("\"slope_bytes_per_round\":null")));
}

TEST(RunsJson, ActiveFirstWithTheFloorTrendFromTheComparison) {
  v1::ListRunsReply list;
  for (const char* id : {"r-old", "r-active", "r-new"}) {
    v1::RunStatus& run = *list.add_runs();
    run.set_run_id(id);
    run.set_state(std::string(id) == "r-active" ? "active" : "ended");
    run.set_started_unix_ms(std::string(id) == "r-old" ? 1 : 2);
  }
  EXPECT_EQ(runs_for_floors(list, 2), (std::vector<std::string>{"r-active", "r-new"}));
  v1::CompareReply floors;
  v1::CompareRow& row = *floors.add_rows();
  row.set_run_id("r-new");
  row.set_first_floor_bytes(100);
  row.set_last_floor_bytes(300);
  const std::string json = runs_json(list, PageContext{}, floors);
  EXPECT_LT(json.find("\"r-active\""), json.find("\"r-new\""));
  EXPECT_LT(json.find("\"r-new\""), json.find("\"r-old\""));
  EXPECT_THAT(json,
              HasSubstr("\"run_id\":\"r-new\",\"job\":\"\",\"labels\":{},\"state\":\"ended\""));
  EXPECT_THAT(json, HasSubstr("\"floors\":1,\"first_floor_bytes\":100,\"last_floor_bytes\":300"));
}

TEST(Export, IsOneFileWhoseScriptAndStyleAreAllowedByHashOnly) {
  v1::ReportReply r = report::testing::design_report(report::testing::design_build(0));
  r.mutable_run()->set_job("job</script><script>alert(1)</script>");
  (*r.mutable_run()->mutable_labels())["k\"><img src=x onerror=alert(2)>"] = "</style><b>";
  const std::string html = export_html(r, PageContext{});
  EXPECT_THAT(html, HasSubstr("script-src 'sha256-" + sha256_base64(app_js()) + "'"));
  EXPECT_THAT(html, HasSubstr("style-src 'sha256-" + sha256_base64(app_css()) + "'"));
  EXPECT_THAT(html, Not(HasSubstr("'unsafe-inline'")));
  // Nothing is loaded from elsewhere (the SVG namespace URI in the script is a name, not a fetch).
  EXPECT_THAT(html, Not(HasSubstr("src=\"http")));
  EXPECT_THAT(html, Not(HasSubstr("href=\"http")));
  EXPECT_THAT(html, Not(HasSubstr("url(")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  // Two scripts (the data, inert, and the page's own), one stylesheet; no markup from the run.
  std::size_t scripts = 0;
  for (std::size_t at = 0; (at = html.find("<script", at)) != std::string::npos; ++at) ++scripts;
  EXPECT_EQ(scripts, 2u);
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("</style><b>")));
  EXPECT_THAT(html, HasSubstr("<title>ramguard: job&lt;/script&gt;"));
  // The script and the stylesheet are the embedded assets, byte for byte (the hash holds).
  EXPECT_THAT(html, HasSubstr("<script>" + std::string(app_js()) + "</script>"));
}

TEST(Export, TheAssetsCannotCloseTheirOwnElements) {
  EXPECT_EQ(app_js().find("</script"), std::string_view::npos);
  EXPECT_EQ(app_css().find("</style"), std::string_view::npos);
  // The page builds DOM from text: no HTML parsing of data anywhere in the script.
  EXPECT_EQ(app_js().find("innerHTML"), std::string_view::npos);
  EXPECT_EQ(app_js().find("outerHTML"), std::string_view::npos);
  EXPECT_EQ(app_js().find("insertAdjacentHTML"), std::string_view::npos);
  EXPECT_EQ(app_js().find("document.write"), std::string_view::npos);
  EXPECT_EQ(app_js().find("eval("), std::string_view::npos);
}

TEST(ScriptSafeJson, HasNoAngleBrackets) {
  EXPECT_EQ(script_safe_json(R"({"a":"</script><!--"})"),
            R"({"a":"\u003c/script\u003e\u003c!--"})");
}

class FakeSource final : public Source {
 public:
  std::string runs_json() override { return "{\"runs\":[]}"; }
  std::string run_json(const std::string& run_id) override {
    if (run_id == "theirs") throw SourceError(403, "uid 1 may not read run theirs");
    last_run = run_id;
    return "{}";
  }
  std::string compare_json(const std::vector<std::string>& ids) override {
    last_ids = ids;
    return "{\"rows\":[]}";
  }
  std::string last_run;
  std::vector<std::string> last_ids;
};

TEST(Routes, AnswerOnlyUnderTheToken) {
  FakeSource source;
  const std::string token = "0123456789abcdef0123456789abcdef";
  for (const char* target : {"/", "/api/runs", "/app.js", "/0123456789abcdef0123456789abcdee/",
                             "/0123456789abcdef0123456789abcdef", "/x/../api/runs",
                             "/0123456789abcdef0123456789abcdefX/api/runs"}) {
    const Response r = route(source, token, "GET", target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.body, "not found\n") << target;
  }
  const std::string base = "/" + token + "/";
  EXPECT_EQ(route(source, token, "POST", base + "api/runs").status, 405);
  const Response shell = route(source, token, "GET", base);
  EXPECT_EQ(shell.status, 200);
  EXPECT_THAT(shell.body, HasSubstr("<script src=\"" + base + "app.js\"></script>"));
  EXPECT_EQ(route(source, token, "GET", base + "app.js").body, std::string(app_js()));
  EXPECT_EQ(route(source, token, "GET", base + "api/runs").content_type, "application/json");
  EXPECT_EQ(route(source, token, "GET", base + "api/run/r%2D1%3Cx").status, 200);
  EXPECT_EQ(source.last_run, "r-1<x");
  const Response refused = route(source, token, "GET", base + "api/run/theirs");
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.body, "{\"error\":\"uid 1 may not read run theirs\"}\n");
  EXPECT_EQ(route(source, token, "GET", base + "api/compare?ids=a,b%2Cc").status, 200);
  EXPECT_EQ(source.last_ids, (std::vector<std::string>{"a", "b,c"}));
  EXPECT_EQ(route(source, token, "GET", base + "api/compare").status, 400);
  EXPECT_THAT(served_csp(), HasSubstr("script-src 'self'"));
  EXPECT_THAT(served_csp(), HasSubstr("default-src 'none'"));
}

TEST(Routes, TokensAreRandomAndLongEnough) {
  const std::string a = random_token(), b = random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace ramguard::web
