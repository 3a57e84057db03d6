// The fleet history against a real HTTP server on the loopback (Asio, in the test, answering as
// Prometheus's query API does): local history first, the fleet's filtered by owner, one query
// per job per TTL, failures said in the note. Timeouts and a real Prometheus are in
// tests/e2e/fleet_e2e_test.cpp.
#include "fleet/fleet_history.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

namespace ramguard {
namespace {

using asio::ip::tcp;
using ::testing::HasSubstr;

// Answers every connection with `body` (HTTP 200) and remembers the request lines.
class QueryServer {
 public:
  explicit QueryServer(asio::io_context& io)
      : acceptor_(io, {asio::ip::make_address("127.0.0.1"), 0}) {
    accept();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string body;
  std::vector<std::string> requests;

 private:
  void accept() {
    acceptor_.async_accept([this](const asio::error_code& ec, tcp::socket socket) {
      if (ec) return;
      auto s = std::make_shared<tcp::socket>(std::move(socket));
      auto buffer = std::make_shared<asio::streambuf>();
      asio::async_read_until(
          *s, *buffer, "\r\n\r\n", [this, s, buffer](const asio::error_code& e, std::size_t) {
            if (e) return;
            std::istream in(buffer.get());
            std::string line;
            std::getline(in, line);
            requests.push_back(line);
            auto reply = std::make_shared<std::string>(
                "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body);
            asio::async_write(*s, asio::buffer(*reply),
                              [s, reply](const asio::error_code&, std::size_t) {
                                asio::error_code ignored;
                                s->shutdown(tcp::socket::shutdown_both, ignored);
                              });
          });
      accept();
    });
  }
  tcp::acceptor acceptor_;
};

struct LocalLedger final : JobHistory {
  std::optional<MeasuredPeak> peak;
  std::optional<MeasuredPeak> peak_on_record(const std::string&,
                                             const std::vector<std::uint32_t>&) override {
    return peak;
  }
};

FleetSettings settings_for(std::uint16_t port) {
  FleetSettings s;
  s.url = HttpUrl{"127.0.0.1", port, ""};
  s.cache_ttl = std::chrono::hours(1);
  return s;
}

// prepare, then run the loop until `ready` was called.
void prepared(asio::io_context& io, FleetJobHistory& history, const std::string& job) {
  bool ready = false;
  history.prepare(job, [&] { ready = true; });
  io.restart();
  while (!ready && io.run_one() > 0) {
  }
  ASSERT_TRUE(ready);
}

constexpr const char* kTwoNodes = R"({"status":"success","data":{"resultType":"vector","result":[
  {"metric":{"uid":"1000","node":"node-a"},"value":[1,"7900000000"]},
  {"metric":{"uid":"2000","node":"node-c"},"value":[1,"90000000000"]}]}})";

TEST(FleetHistory, TheFleetPeakOfTheOwnersRunsWithWhereItWasMeasured) {
  asio::io_context io;
  QueryServer server(io);
  server.body = kTwoNodes;
  LocalLedger local;
  FleetJobHistory history(io, &local, settings_for(server.port()));
  prepared(io, history, "fedavg");
  ASSERT_EQ(server.requests.size(), 1u);
  EXPECT_THAT(server.requests[0], HasSubstr("GET /api/v1/query?query=max%20by%20%28uid"));
  EXPECT_THAT(server.requests[0], HasSubstr("ramguard_job%3D%22fedavg%22"));

  // uid 2000's bigger run does not count for uid 1000 (nor for root, trusted only as itself).
  auto peak = history.peak_on_record("fedavg", {0, 1000});
  ASSERT_TRUE(peak.has_value());
  EXPECT_EQ(peak->peak_bytes, 7'900'000'000u);
  EXPECT_EQ(peak->run_id, "fleet:node-a");
  EXPECT_EQ(peak->origin, "fleet peak 7.90 GB over 30 d, node-a");
  EXPECT_FALSE(history.peak_on_record("fedavg", {0, 3000}).has_value());
  EXPECT_EQ(history.note("fedavg"), "");

  // Cached for the TTL: no second query.
  prepared(io, history, "fedavg");
  EXPECT_EQ(server.requests.size(), 1u);
  // The ledger's own history wins over the fleet's.
  local.peak = MeasuredPeak{"r-local", 1'000'000, ""};
  EXPECT_EQ(history.peak_on_record("fedavg", {0, 1000})->run_id, "r-local");
}

// At shutdown the admissions waiting for a query are dropped (their requests go with them while
// the server is still there), not answered later by the query's completion.
TEST(FleetHistory, DroppedWaitersAreReleasedAtOnceAndNotAnsweredLater) {
  asio::io_context io;
  QueryServer server(io);
  server.body = kTwoNodes;
  LocalLedger local;
  FleetJobHistory history(io, &local, settings_for(server.port()));
  auto request = std::make_shared<int>(0);  // what a waiter holds: the request's coroutine
  bool answered = false;
  history.prepare("fedavg", [&answered, request] { answered = true; });
  EXPECT_EQ(request.use_count(), 2);
  history.drop_waiting();
  EXPECT_EQ(request.use_count(), 1);
  // The query still completes and is cached; the dropped waiter hears nothing.
  while (!history.peak_on_record("fedavg", {1000}) && io.run_one_for(std::chrono::seconds(5)) > 0) {
  }
  ASSERT_TRUE(history.peak_on_record("fedavg", {1000}).has_value());
  EXPECT_FALSE(answered);
  EXPECT_EQ(server.requests.size(), 1u);
  prepared(io, history, "fedavg");  // answered from the cache
  EXPECT_EQ(server.requests.size(), 1u);
}

TEST(FleetHistory, HashedJobNamesAreAskedForHashed) {
  asio::io_context io;
  QueryServer server(io);
  server.body = kTwoNodes;
  FleetSettings s = settings_for(server.port());
  s.job_names = JobNames::kHash;
  FleetJobHistory history(io, nullptr, s);
  prepared(io, history, "fedavg");
  ASSERT_EQ(server.requests.size(), 1u);
  EXPECT_THAT(server.requests[0], HasSubstr("ramguard_job%3D%22h-"));
  EXPECT_THAT(server.requests[0], ::testing::Not(HasSubstr("fedavg")));
}

TEST(FleetHistory, AnEndpointThatCannotBeAskedIsSaidAndLeavesTheLocalHistory) {
  asio::io_context io;
  std::uint16_t closed_port = 0;
  {
    tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    closed_port = a.local_endpoint().port();
  }  // closed: connections are refused
  LocalLedger local;
  local.peak = MeasuredPeak{"r-local", 1'000'000, ""};
  FleetJobHistory history(io, &local, settings_for(closed_port));
  prepared(io, history, "fedavg");
  EXPECT_EQ(history.peak_on_record("fedavg", {})->run_id, "r-local");
  EXPECT_THAT(history.note("fedavg"), HasSubstr("fleet history unavailable (127.0.0.1:"));
  EXPECT_THAT(history.note("fedavg"), HasSubstr("): local history only"));

  // A server that answers a failed query: its message is the reason.
  QueryServer server(io);
  server.body = R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})";
  history.set_settings(settings_for(server.port()));
  prepared(io, history, "fedavg");
  EXPECT_THAT(history.note("fedavg"), HasSubstr("the query failed: parse error at char 3"));
}

}  // namespace
}  // namespace ramguard
