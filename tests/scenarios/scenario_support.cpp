#include "scenario_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ramguard::testing {

std::string scenario_config(const ScaledThresholds& t) {
  std::ostringstream y;
  // Plain byte counts: the scaled sizes are exact, no unit rounding.
  y << "budget: " << t.budget_bytes << "\n"
    << "sampling:\n  interval: 100ms\n"
    << "growth:\n  min_bytes: " << t.growth_min_bytes << "\n  settle: 300ms\n"
    << "release:\n  slack: " << t.release_slack_bytes << "\n  grace: 3s\n"
    << t.extra;
  return y.str();
}

std::unique_ptr<Daemon> start_scenario_daemon(const ScaledThresholds& t,
                                              std::filesystem::path state_dir) {
  Daemon::Options o;
  o.config_yaml = scenario_config(t);
  o.args = {"--log-level", "debug"};
  o.state_dir = std::move(state_dir);
  return Daemon::start(std::move(o));
}

Shaper::Shaper(MemChild& child) : child_(child), base_(child.command("rss")) {}

void Shaper::level(std::uint64_t level_bytes) {
  if (level_bytes > base_) {
    child_.command("alloc level " + std::to_string(level_bytes - base_));
    have_level_ = true;
  } else if (have_level_) {
    child_.command("free level");
    have_level_ = false;
  }
}

void Shaper::extra(const std::string& name, std::uint64_t bytes) {
  child_.command("alloc " + name + " " + std::to_string(bytes));
}

void Shaper::free_extra(const std::string& name) {
  child_.command("free " + name);
}

namespace {

v1::Reply checked(const Daemon& daemon, const v1::Request& request, const char* what) {
  v1::Reply reply = daemon.call(request);
  if (reply.has_error()) {
    throw std::runtime_error(std::string(what) + " refused: " + reply.error().message());
  }
  return reply;
}

}  // namespace

ScenarioRun::ScenarioRun(Daemon& daemon, pid_t pid, const Start& start) : daemon_(daemon) {
  v1::Request req;
  auto* s = req.mutable_run_start();
  s->set_pid(static_cast<std::uint32_t>(pid));
  s->set_job(start.job);
  s->set_model_bytes(start.model_bytes);
  s->set_declared_rounds(start.declared_rounds);
  s->set_hosts(start.hosts);
  s->set_reservation_id(start.reservation_id);
  s->set_scope(start.scope);
  s->set_cgroup_path(start.cgroup_path);
  for (const auto& [k, v] : start.labels) (*s->mutable_labels())[k] = v;
  start_ = checked(daemon_, req, "run start").run_start();
  id_ = start_.run_id();
}

v1::MarkReply ScenarioRun::mark(v1::MarkRequest::Kind kind, const std::string& phase) {
  v1::Request req;
  auto* m = req.mutable_mark();
  m->set_run_id(id_);
  m->set_kind(kind);
  m->set_phase(phase);
  v1::MarkReply reply = checked(daemon_, req, "mark").mark();
  if (kind == v1::MarkRequest::ROUND_END) rounds_ = reply.round();
  return reply;
}

v1::MarkReply ScenarioRun::begin(const std::string& phase) {
  return mark(v1::MarkRequest::PHASE_BEGIN, phase);
}
v1::MarkReply ScenarioRun::end(const std::string& phase) {
  return mark(v1::MarkRequest::PHASE_END, phase);
}
v1::MarkReply ScenarioRun::round_end() {
  return mark(v1::MarkRequest::ROUND_END, "");
}

v1::RunEndReply ScenarioRun::finish() {
  v1::Request req;
  req.mutable_run_end()->set_run_id(id_);
  return checked(daemon_, req, "run end").run_end();
}

v1::MarkReply ScenarioRun::round(Shaper& shaper, std::uint64_t peak_bytes,
                                 std::uint64_t floor_bytes, const std::string& phase) {
  begin(phase);
  shaper.level(floor_bytes);
  if (peak_bytes > floor_bytes) {
    shaper.extra("transient", peak_bytes - floor_bytes);
    shaper.free_extra("transient");
  }
  v1::MarkReply ended = end(phase);
  round_end();
  wait_settled(rounds_);
  return ended;
}

void ScenarioRun::wait_settled(std::uint32_t round) {
  const std::string needle =
      "event=run.boundary_settled run=" + id_ + " round=" + std::to_string(round) + " ";
  if (daemon_.wait_for_log(needle, 10s).empty()) {
    ADD_FAILURE() << "boundary of round " << round << " of " << id_ << " never settled";
  }
}

v1::RunStatus ScenarioRun::status() const {
  v1::Request req;
  req.mutable_status()->set_run_id(id_);
  v1::StatusReply reply = checked(daemon_, req, "status").status();
  if (reply.runs_size() != 1) throw std::runtime_error("status did not return run " + id_);
  return reply.runs(0);
}

v1::RunStatus ScenarioRun::report() const {
  v1::Request req;
  req.mutable_report()->set_run_id(id_);
  return checked(daemon_, req, "report").report().run();
}

std::vector<v1::Verdict> verdicts_of(const v1::RunStatus& run, const std::string& kind) {
  std::vector<v1::Verdict> out;
  for (const auto& v : run.verdicts()) {
    if (v.kind() == kind) out.push_back(v);
  }
  return out;
}

std::string verdict_text(const v1::RunStatus& run) {
  std::string out;
  for (const auto& v : run.verdicts()) {
    out += "  " + v.kind() + "[round " + std::to_string(v.round()) + "]" +
           (v.cleared() ? "(cleared) " : " ") + v.summary() + "\n";
  }
  return out.empty() ? "  (no verdicts)\n" : out;
}

std::string floors_text(const v1::RunStatus& run) {
  std::ostringstream out;
  for (const auto& b : run.boundaries()) {
    out << " r" << b.round() << "=" << static_cast<double>(b.floor_bytes()) / (1 << 20) << "MiB";
  }
  return out.str();
}

double figure(const v1::Verdict& verdict, const std::string& name) {
  auto it = verdict.figures().find(name);
  return it == verdict.figures().end() ? std::nan("") : it->second;
}

v1::RunStatus wait_for_verdict(const ScenarioRun& run, const std::string& kind,
                               std::chrono::milliseconds timeout) {
  v1::RunStatus status;
  eventually(
      [&] {
        status = run.status();
        return !verdicts_of(status, kind).empty();
      },
      timeout);
  return status;
}

std::uint64_t counted(const v1::Reading& reading) {
  return reading.anon_bytes() + reading.shmem_bytes() + reading.swap_bytes();
}

TestMemoryCgroup::TestMemoryCgroup(const std::string& tag) {
  const std::filesystem::path v1 = "/sys/fs/cgroup/memory";
  if (!std::filesystem::exists(v1 / "memory.usage_in_bytes")) {
    problem_ = "this kernel has no v1 memory controller at " + v1.string();
    return;
  }
  dir_ = v1 / ("ramguard-" + tag + "-" + std::to_string(::getpid()));
  std::error_code ec;
  std::filesystem::create_directory(dir_, ec);
  if (ec) problem_ = "cannot create " + dir_.string() + ": " + ec.message();
}

TestMemoryCgroup::~TestMemoryCgroup() {
  if (dir_.empty()) return;
  // The kernel may take a moment to let go of an exited process: retry the rmdir briefly.
  for (int i = 0; i < 50; ++i) {
    std::error_code ec;
    std::filesystem::remove(dir_, ec);
    if (!std::filesystem::exists(dir_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void TestMemoryCgroup::add(pid_t pid) const {
  std::ofstream(dir_ / "cgroup.procs") << pid << "\n";
}

void TestMemoryCgroup::limit(std::uint64_t bytes) const {
  std::ofstream(dir_ / "memory.limit_in_bytes") << bytes << "\n";
}

std::uint64_t TestMemoryCgroup::read(const std::string& file) const {
  std::ifstream in(dir_ / file);
  std::uint64_t value = 0;
  in >> value;
  return value;
}

}  // namespace ramguard::testing
