// Every figure a verdict states is the quantity it names. A set of real runs (a growing floor
// that ends held, a release that passes, an estimate and a budget passed) on the real daemon;
// every number of every verdict summary is parsed with its unit and found again in that run's
// report (`ramguard report`, its headers and tables, never the verdict sentences themselves),
// under the quantity the sentence names: RSS, counted (anon + shmem + swap), the application's
// bytes, page cache, or the figure's own label (baseline, limit, estimate, budget, ...).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A number with its unit: "67.7 MB", "3.00 s", "1.3 model copies", "90%", "0.00".
const std::regex& figure_pattern() {
  static const std::regex re(
      R"((^|[^\w.+^/-])([+-]?\d+(?:\.\d+)?)(?:%|x\b| ?((?:TB|GB|MB|kB|B|TiB|GiB|MiB|KiB|ms|s|min|h|model copies|copies)\b(?:/round|/s)?))?)");
  return re;
}

// The quantities a sentence can name, longest first. The first four are the memory kinds; a
// figure of one of them must be found under that kind.
const std::vector<std::string>& quantity_words() {
  static const std::vector<std::string> words = {
      "page cache", "application", "counted", "rss",    "baseline", "limit",    "estimate",
      "budget",     "slack",       "grace",   "ratio",  "floor",    "peak",     "copies",
      "round",      "pid",         "code",    "signal", "fraction", "headroom", "threshold",
      "fit",        "rate",        "usage",   "held",   "over"};
  return words;
}
bool is_memory_kind(const std::string& word) {
  return word == "page cache" || word == "application" || word == "counted" || word == "rss";
}

// A number as printed, with its unit: "" (a plain number), "%", "x" (a ratio) or a size, a
// duration or model copies.
struct Token {
  std::string text;  // "67.7 MB", "1.34", "94%"
  double number = 0;
  int decimals = 0;
  std::string unit;
  std::size_t at = 0, end = 0;  // where the number begins and the match ends
};

std::vector<Token> tokens_of(const std::string& text) {
  std::vector<Token> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), figure_pattern());
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    Token t;
    const std::string number = m[2].str();
    t.number = std::stod(number);
    const std::size_t dot = number.find('.');
    t.decimals = dot == std::string::npos ? 0 : static_cast<int>(number.size() - dot - 1);
    const std::string tail = text.substr(static_cast<std::size_t>(m.position(2)) + number.size(),
                                         static_cast<std::size_t>(m.length(0)));
    if (m[3].matched) {
      t.unit = m[3].str();
    } else if (tail.starts_with("%")) {
      t.unit = "%";
    } else if (tail.starts_with("x")) {
      t.unit = "x";
    }
    // A sign is the sentence's way of saying growth: "+41.9 MB" is the 41.9 MB it grew.
    t.text = (number.starts_with('+') ? number.substr(1) : number) +
             (m[3].matched ? " " + t.unit : t.unit);
    t.at = static_cast<std::size_t>(m.position(2));
    t.end = static_cast<std::size_t>(m.position(0) + m.length(0));
    out.push_back(std::move(t));
  }
  return out;
}

// A sentence's figure and a report's are the same value: the same text for sizes, durations
// and copies; for plain numbers, ratios and percentages the report's value rounded as the
// sentence prints it (a percentage may be a fraction there: 94% is 0.94).
bool same_value(const Token& said, const Token& shown) {
  const bool plain_said = said.unit.empty() || said.unit == "x" || said.unit == "%";
  const bool plain_shown = shown.unit.empty() || shown.unit == "x" || shown.unit == "%";
  if (!plain_said || !plain_shown) {
    if (said.text == shown.text) return true;
    // A sentence may print more digits where two figures would read alike ("0.201 GB exceeds
    // the 0.200 GB budget"): the same figure if it rounds to what the report prints.
    const double shown_scale = std::pow(10.0, shown.decimals);
    return said.unit == shown.unit && said.decimals > shown.decimals &&
           std::llround(said.number * shown_scale) == std::llround(shown.number * shown_scale);
  }
  const double scale = std::pow(10.0, said.decimals);
  auto rounds_to = [&](double v) {
    return std::llround(v * scale) == std::llround(said.number * scale);
  };
  if (said.unit == "%" && shown.unit != "%") return rounds_to(shown.number * 100);
  return rounds_to(shown.number);
}

struct Figure {
  Token value;
  std::string name;  // the quantity word nearest the figure in its clause ("" when none)
  std::string kind;  // set when that word is a memory kind
};

// The text before a figure, back to the start of its clause (';', '(', '=' or a sentence end).
std::string clause_before(const std::string& text, std::size_t at) {
  std::size_t from = 0;
  for (std::size_t i = at; i > 0; --i) {
    const char c = text[i - 1];
    if (c == ';' || c == '(' || c == '=' || c == ',' || c == ':' ||
        (c == '.' && i < text.size() && text[i] == ' ')) {
      from = i;
      break;
    }
  }
  return lower(text.substr(from, at - from));
}

// A quantity word right after a figure names it: "the 0.20 GB budget", "the 6.7 MB per-round
// threshold", "67.3 MB of counted memory".
std::string name_after(const std::string& text, std::size_t end) {
  const std::string next = lower(text.substr(end, 24));
  if (next.starts_with(" not ")) return "";  // "(page cache 3.4 MB not counted)"
  const std::size_t stop = next.find_first_of(",;:=+().0123456789");
  std::size_t best_at = std::string::npos;
  std::string best;
  for (const auto& word : quantity_words()) {
    const std::size_t at = next.find(word);
    // A round number precedes its word ("round 4"): "0.13 GB in round 4" is not a round.
    if (word == "round") continue;
    if (at != std::string::npos && at < stop && at < best_at) {
      best_at = at;
      best = word;
    }
  }
  return best;
}

// What the summary defines rather than states: the counted memory's definition.
std::string without_definitions(std::string text) {
  const std::string def = " (anon + shmem + swap)";
  for (std::size_t at; (at = text.find(def)) != std::string::npos;) text.erase(at, def.size());
  return text;
}

std::string nearest(const std::string& before, bool memory_kinds_only) {
  std::size_t best_at = std::string::npos;
  std::string best;
  for (const auto& word : quantity_words()) {
    if (memory_kinds_only && !is_memory_kind(word)) continue;
    const std::size_t at = before.rfind(word);
    if (at == std::string::npos) continue;
    const std::size_t end = at + word.size();
    if (best_at == std::string::npos || end > best_at) {
      best_at = end;
      best = word;
    }
  }
  return best;
}

std::vector<Figure> figures_of(const std::string& text) {
  const std::string summary = without_definitions(text);
  std::vector<Figure> out;
  for (Token& t : tokens_of(summary)) {
    Figure f;
    const std::string before = clause_before(summary, t.at);
    // A ratio ("1.15x") is found as a ratio, a rate ("41.9 MB/round") under a per-round name.
    f.name = t.unit == "x"                ? "ratio"
             : t.unit.ends_with("/round") ? "round"
                                          : name_after(summary, t.end);
    if (f.name.empty()) f.name = nearest(before, false);
    // The name nearest the figure decides: "limit 17.5 MB" is a limit even in a clause about
    // counted memory; a memory kind must be found under that kind.
    if (is_memory_kind(f.name)) f.kind = f.name;
    f.value = std::move(t);
    out.push_back(std::move(f));
  }
  return out;
}

// Where a value appears in the report, and what names it there: for a line, its text before
// the value (its label and words); for a table cell, the table's title and the column's header.
struct Place {
  std::string context;
  std::string line;
};

bool is_dash_rule(const std::string& line) {
  return line.find("--") != std::string::npos && line.find_first_not_of("- ") == std::string::npos;
}

// The report less every verdict sentence (the "Verdicts" table, the "[severity] kind" lines
// and the "Estimate note"), indexed by value.
std::vector<std::pair<Token, Place>> index_report(const std::string& report) {
  std::vector<std::string> lines;
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<std::pair<Token, Place>> out;
  std::string title;  // the last unindented line: a section's title
  bool in_verdicts = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    // An unindented line is a field ("Peak:           counted ...") or a section's title.
    std::string label;
    if (!line.empty() && line[0] != ' ') {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos && colon < 16) {
        label = line.substr(0, colon);
        title.clear();
      } else {
        title = line.substr(0, line.find(" ("));  // the title, not its legend
      }
      in_verdicts = line.rfind("Verdicts", 0) == 0 && label.empty();
    }
    if (in_verdicts || line.find("  [") == 0 || line.rfind("Estimate note:", 0) == 0) continue;
    // A table: a header line, then a rule of dashes giving the columns.
    if (i + 1 < lines.size() && is_dash_rule(lines[i + 1])) continue;  // the header itself
    if (is_dash_rule(line)) continue;
    std::size_t header_at = std::string::npos;
    for (std::size_t j = i; j > 0; --j) {
      if (is_dash_rule(lines[j - 1]) && j >= 2) {
        header_at = j - 2;
        break;
      }
      if (lines[j - 1].empty() || lines[j - 1][0] != ' ') break;
    }
    std::size_t prev_end = 0;
    for (Token& t : tokens_of(line)) {
      const std::size_t at = t.at;
      Place place;
      place.line = line;
      if (header_at != std::string::npos) {
        // The column whose dashes span this cell.
        const std::string& rule = lines[header_at + 1];
        std::size_t begin = at;
        while (begin > 0 && rule.size() > begin && rule[begin] == '-' && rule[begin - 1] == '-')
          --begin;
        std::size_t end = at;
        while (end < rule.size() && rule[end] == '-') ++end;
        const std::string& header = lines[header_at];
        const std::string column = begin < header.size()
                                       ? header.substr(begin, std::min(end, header.size()) - begin)
                                       : std::string();
        place.context = lower(title + " | " + column);
      } else {
        // A field's label ("Peak:") and the words since the previous figure on the line.
        place.context = lower(title + " " + label + " | " + line.substr(prev_end, at - prev_end));
      }
      prev_end = t.end;
      out.emplace_back(std::move(t), std::move(place));
    }
  }
  return out;
}

// The report context names the figure as the sentence does.
bool names(const Place& place, const Figure& f) {
  const std::string& c = place.context;
  if (!f.kind.empty()) {
    // A memory kind: the nearest memory kind before the value in the report is the same.
    const std::string after_bar = c.substr(c.rfind('|') + 1);
    const std::string kind = nearest(after_bar, true);
    if (kind == f.kind) return true;
    // A table column named only "peak" or "floor" takes its kind from the table's title.
    return kind.empty() && nearest(c.substr(0, c.rfind('|')), true) == f.kind;
  }
  if (f.name.empty()) return true;
  return c.find(f.name) != std::string::npos;
}

struct RunReport {
  std::string run;
  std::string text;  // ramguard report
  std::vector<v1::Verdict> verdicts;
};

// Every figure of every verdict, found again; the failures listed.
std::string check_figures(const RunReport& r) {
  const auto index = index_report(r.text);
  std::string problems;
  for (const auto& v : r.verdicts) {
    for (const Figure& f : figures_of(v.summary())) {
      bool found = false;
      for (const auto& [value, place] : index) {
        if (same_value(f.value, value) && names(place, f)) {
          found = true;
          break;
        }
      }
      if (!found) {
        problems += "\n" + v.kind() + ": '" + f.value.text + "' named '" +
                    (f.kind.empty() ? f.name : f.kind) +
                    "' is not in the report under that name\n  " + v.summary();
      }
    }
  }
  return problems;
}

v1::Reply call_mark(const Daemon& d, const std::string& run, v1::MarkRequest::Kind kind,
                    const std::string& phase = "aggregation") {
  v1::Request request;
  auto& m = *request.mutable_mark();
  m.set_run_id(run);
  m.set_kind(kind);
  m.set_phase(phase);
  return d.call(request);
}

std::string start(const Daemon& d, pid_t pid, std::uint64_t model_bytes,
                  const std::string& reservation = "") {
  v1::Request request;
  auto& s = *request.mutable_run_start();
  s.set_pid(static_cast<std::uint32_t>(pid));
  s.set_job("verdict-figures");
  s.set_model_bytes(model_bytes);
  s.set_declared_rounds(4);
  if (!reservation.empty()) s.set_reservation_id(reservation);
  const v1::Reply reply = d.call(request);
  EXPECT_FALSE(reply.has_error()) << reply.error().message();
  return reply.run_start().run_id();
}

RunReport report_of(const Daemon& d, const std::string& run) {
  RunReport r;
  r.run = run;
  r.text = run_command({cli_path(), "--socket", d.socket_path().string(), "report", run}).output;
  v1::Request request;
  request.mutable_report()->set_run_id(run);
  const v1::Reply reply = d.call(request);
  for (const auto& v : reply.report().run().verdicts()) r.verdicts.push_back(v);
  return r;
}

// One round: a phase that allocates ALLOC (kept under NAME), then the round's end.
void round(Daemon& d, MemChild& child, const std::string& run, const std::string& name,
           std::uint64_t alloc) {
  ASSERT_FALSE(call_mark(d, run, v1::MarkRequest::PHASE_BEGIN).has_error());
  if (alloc > 0) child.command("alloc " + name + " " + std::to_string(alloc));
  ASSERT_FALSE(call_mark(d, run, v1::MarkRequest::PHASE_END).has_error());
  ASSERT_FALSE(call_mark(d, run, v1::MarkRequest::ROUND_END, "").has_error());
  std::this_thread::sleep_for(350ms);  // past the settle window: the floor is taken
}

bool has_kind(const RunReport& r, const std::string& kind) {
  return std::any_of(r.verdicts.begin(), r.verdicts.end(),
                     [&](const v1::Verdict& v) { return v.kind() == kind; });
}

std::string kinds(const RunReport& r) {
  std::string out;
  for (const auto& v : r.verdicts) out += " " + v.kind();
  return out;
}

const char* kConfig =
    "budget: 200MB\n"
    "growth:\n  settle: 250ms\n  warmup_rounds: 1\n"
    "release:\n  slack: 16MiB\n  grace: 1500ms\n";

TEST(VerdictFigures, EveryFigureOfEveryVerdictIsInTheReportUnderItsName) {
  auto d = Daemon::with_config(kConfig, {"--interval", "100ms"});
  std::vector<RunReport> reports;

  // A floor that grows every round and is held after the end: growth, leak, release fail,
  // the budget passed.
  {
    MemChild child;
    const std::string run = start(*d, child.pid(), 32 * kMiB);
    for (int i = 0; i < 5; ++i) round(*d, child, run, "r" + std::to_string(i), 40 * kMiB);
    v1::Request end;
    end.mutable_run_end()->set_run_id(run);
    ASSERT_FALSE(d->call(end).has_error());
    std::this_thread::sleep_for(2500ms);  // past the release grace
    reports.push_back(report_of(*d, run));
    child.command("exit 0");
    child.wait();
  }
  // An admitted estimate, memory freed at the end: estimate accuracy, release pass.
  {
    MemChild child;
    v1::Request admit;
    admit.mutable_admit()->set_job("verdict-figures");
    admit.mutable_admit()->set_estimate_bytes(48 * kMiB);
    admit.mutable_admit()->set_pid(static_cast<std::uint32_t>(child.pid()));
    const v1::Reply admitted = d->call(admit);
    ASSERT_FALSE(admitted.has_error()) << admitted.error().message();
    const std::string run = start(*d, child.pid(), 32 * kMiB, admitted.admit().reservation_id());
    round(*d, child, run, "a", 64 * kMiB);
    child.command("free a");
    round(*d, child, run, "b", 0);
    v1::Request end;
    end.mutable_run_end()->set_run_id(run);
    ASSERT_FALSE(d->call(end).has_error());
    std::this_thread::sleep_for(500ms);
    reports.push_back(report_of(*d, run));
    child.command("exit 0");
    child.wait();
  }

  const RunReport& grew = reports[0];
  const RunReport& freed = reports[1];
  // The runs produce the verdicts this test is about.
  EXPECT_TRUE(has_kind(grew, "growth_warning") || has_kind(grew, "leak")) << kinds(grew);
  EXPECT_TRUE(has_kind(grew, "release")) << kinds(grew);
  EXPECT_TRUE(has_kind(grew, "over_budget") || has_kind(grew, "headroom")) << kinds(grew);
  EXPECT_TRUE(has_kind(freed, "estimate_accuracy")) << kinds(freed);
  EXPECT_TRUE(has_kind(freed, "release")) << kinds(freed);

  std::size_t figures = 0;
  for (const auto& r : reports) {
    for (const auto& v : r.verdicts) figures += figures_of(v.summary()).size();
    EXPECT_EQ(check_figures(r), "") << "run " << r.run << "\n" << r.text;
  }
  EXPECT_GE(figures, 20U) << "the summaries were parsed";
}

// The parser itself: units, names and the clause a name belongs to.
TEST(VerdictFigures, AFigureTakesTheNameNearestItInItsClause) {
  const auto f = figures_of(
      "Release failed: counted memory (anon + shmem + swap) 0.23 GB; limit 67.7 MB = baseline "
      "0.6 MB + slack 67.1 MB, page cache 12 MB beside it; ratio 1.10, 94% of the 0.20 GB "
      "budget, 1.15x the estimate, 3.00 s.");
  ASSERT_EQ(f.size(), 10U);
  EXPECT_EQ(f[0].value.text, "0.23 GB");
  EXPECT_EQ(f[0].kind, "counted");
  EXPECT_EQ(f[1].value.text, "67.7 MB");
  EXPECT_EQ(f[1].name, "limit");
  EXPECT_EQ(f[1].kind, "");
  EXPECT_EQ(f[2].name, "baseline");
  EXPECT_EQ(f[3].name, "slack");
  EXPECT_EQ(f[4].value.text, "12 MB");
  EXPECT_EQ(f[4].kind, "page cache");
  EXPECT_EQ(f[5].value.text, "1.10");
  EXPECT_EQ(f[5].name, "ratio");
  EXPECT_EQ(f[6].value.text, "94%");
  EXPECT_EQ(f[7].name, "budget");
  EXPECT_EQ(f[8].value.unit, "x");
  EXPECT_EQ(f[8].name, "ratio");
  EXPECT_EQ(f[9].value.text, "3.00 s");
  // Plain numbers, ratios and percentages are compared as printed: 94% is a 0.94 fraction.
  EXPECT_TRUE(same_value(f[6].value, tokens_of("fraction 0.9412")[0]));
  EXPECT_FALSE(same_value(f[6].value, tokens_of("fraction 0.9")[0]));
  EXPECT_TRUE(same_value(f[5].value, tokens_of("ratio 1.1")[0]));
  EXPECT_FALSE(same_value(f[0].value, tokens_of("0.23 MB")[0]));
  EXPECT_TRUE(same_value(tokens_of("0.201 GB")[0], tokens_of("0.20 GB")[0]));
  EXPECT_FALSE(same_value(tokens_of("0.206 GB")[0], tokens_of("0.20 GB")[0]));
  EXPECT_FALSE(same_value(tokens_of("0.2 GB")[0], tokens_of("0.20 GB")[0])) << "fewer digits";
}

}  // namespace
}  // namespace ramguard::testing
