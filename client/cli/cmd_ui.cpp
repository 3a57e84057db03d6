// ui: the run page served by the CLI, as the user who runs it (client/web).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <ostream>

#include "commands.hpp"
#include "ramguard/units.hpp"
#include "web/page.hpp"
#include "web/server.hpp"

namespace ramguard::cli {
namespace {

std::atomic<bool> g_stop{false};
constexpr std::uint32_t kListRefreshMs = 10'000;
constexpr std::size_t kRunsWithFloors = 20;

extern "C" void on_stop_signal(int) {
  g_stop.store(true);
}

// Every request asks the daemon anew over the control socket, with this user's credentials:
// the page shows exactly what `ramguard report` would show this user.
class DaemonSource final : public web::Source {
 public:
  DaemonSource(const GlobalOptions& g, std::uint32_t refresh_ms) : g_(g) {
    context_.refresh_ms = refresh_ms;
  }

  std::string runs_json() override {
    return call([&](Client& client) {
      web::PageContext context = context_;
      // The list refreshes less often than a run: each refresh compares its first runs
      // (ledger reads in the daemon) for their floor trend.
      context.refresh_ms = std::max<std::uint32_t>(context.refresh_ms, kListRefreshMs);
      context.budget_bytes = client.status().budget_bytes();
      const v1::ListRunsReply runs = client.list_runs(200);
      return web::runs_json(runs, context, floors_of(client, runs));
    });
  }
  std::string run_json(const std::string& run_id) override {
    return call([&](Client& client) {
      const v1::ReportReply reply = client.report(run_id, true);
      web::PageContext context = context_;
      context.budget_bytes = client.status(run_id).budget_bytes();
      return web::run_json(reply, context);
    });
  }
  std::string compare_json(const std::vector<std::string>& run_ids) override {
    return call([&](Client& client) { return web::compare_json(client.compare(run_ids, {})); });
  }

 private:
  // The floor trends of the list's first runs: ended runs' come from this server's cache (they
  // no longer change), so each refresh compares only the runs still active or not yet seen.
  v1::CompareReply floors_of(Client& client, const v1::ListRunsReply& runs) {
    std::vector<std::string> ask;
    v1::CompareReply floors;
    for (const std::string& id : web::runs_for_floors(runs, kRunsWithFloors)) {
      const auto cached = ended_floors_.find(id);
      if (cached != ended_floors_.end()) {
        *floors.add_rows() = cached->second;
      } else {
        ask.push_back(id);
      }
    }
    if (ask.empty()) return floors;
    v1::CompareReply fresh;
    try {
      fresh = client.compare(ask, {});
    } catch (const ClientError&) {
      return floors;  // a run gone between the two requests: no new trends this time
    }
    if (ended_floors_.size() > 4 * kRunsWithFloors) ended_floors_.clear();
    for (const v1::RunStatus& run : runs.runs()) {
      if (run.state() == "active") continue;
      for (const v1::CompareRow& row : fresh.rows()) {
        if (row.run_id() == run.run_id()) ended_floors_[row.run_id()] = row;
      }
    }
    for (v1::CompareRow& row : *fresh.mutable_rows()) *floors.add_rows() = std::move(row);
    return floors;
  }
  template <typename F>
  std::string call(F&& fetch) {
    try {
      Client client = connect(g_);
      return fetch(client);
    } catch (const ClientError& e) {
      int status = 502;
      if (e.code() == v1::Error::NOT_FOUND) status = 404;
      if (e.code() == v1::Error::PERMISSION_DENIED) status = 403;
      if (e.code() == v1::Error::INVALID_ARGUMENT) status = 400;
      throw web::SourceError(status, e.what());
    }
  }

  const GlobalOptions& g_;
  web::PageContext context_;
  std::map<std::string, v1::CompareRow> ended_floors_;
};

}  // namespace

// ui --listen HOST:PORT (IPv4; PORT 0 or omitted: any free port) --refresh DURATION.
UiArgs build_ui(const Scanned& s) {
  expect_positionals(s, "ui", 0, 0, "");
  UiArgs a;
  if (const std::string* listen = s.get("listen")) {
    const std::size_t colon = listen->rfind(':');
    const std::string host = colon == std::string::npos ? *listen : listen->substr(0, colon);
    if (host.empty())
      throw UsageError{"--listen '" + *listen + "' needs a host, e.g. 127.0.0.1:8080"};
    a.host = host;
    if (colon != std::string::npos) {
      auto port = units::parse_count(listen->substr(colon + 1), 65535);
      if (!port) throw UsageError{"--listen '" + *listen + "': port: " + port.error};
      a.port = static_cast<std::uint16_t>(*port.value);
    }
  }
  if (const std::string* refresh = s.get("refresh")) {
    auto parsed = units::parse_duration(*refresh);
    if (!parsed) throw UsageError{"--refresh: " + parsed.error};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*parsed.value).count();
    if (ms < 500 || ms > 3'600'000) {
      throw UsageError{"--refresh '" + *refresh + "' must be between 500ms and 1h"};
    }
    a.refresh_ms = static_cast<std::uint32_t>(ms);
  }
  return a;
}

int cmd_ui(const GlobalOptions& g, const UiArgs& a, std::ostream& out, std::ostream& err) {
  {
    Client client = connect(g);  // the daemon answers before anything is served
    client.hello();
  }
  web::HttpServer server(a.host, a.port);
  const std::string token = web::random_token();
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  ::sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  if (a.host != "127.0.0.1") {
    err << "ramguard ui: listening on " << a.host
        << ", not loopback: anyone who learns the address below reads what you may read\n";
  }
  out << "http://" << a.host << ":" << server.port() << "/" << token << "/" << std::endl;
  DaemonSource source(g, a.refresh_ms);
  server.serve(source, token, g_stop);
  return kExitOk;
}

}  // namespace ramguard::cli
