#include "config/load.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "config/limits.hpp"
#include "config/schema.hpp"
#include "config/values.hpp"
#include "config/yaml_walk.hpp"
#include "ramguard/base/protocol.hpp"
#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

// Counts documents, stopping at `cap`. YAML::LoadAll is not used: on some malformed input
// yaml-cpp 0.7 keeps yielding empty documents forever and exhausts memory.
class IgnoreEvents final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

int count_documents(const std::string& text, int cap) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  IgnoreEvents ignore;
  int documents = 0;
  while (documents < cap && parser.HandleNextDocument(ignore)) ++documents;
  return documents;
}

std::string bytes_text(std::uint64_t bytes) {
  return format_bytes(static_cast<double>(bytes)) + " (" + std::to_string(bytes) + " bytes)";
}

}  // namespace

Config default_config() {
  return Config{};
}

Result<Config> parse_config_yaml(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  YAML::Node root;
  int documents = 0;
  try {
    const std::string owned(text);
    documents = count_documents(owned, 2);
    if (documents == 1) root = YAML::Load(owned);
  } catch (const YAML::Exception& e) {
    std::string where = source;
    if (!e.mark.is_null()) {
      where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    }
    return Error{where + ": malformed YAML: " + e.msg};
  } catch (const std::exception& e) {
    return Error{source + ": malformed YAML: " + e.what()};
  }
  if (documents > 1) {
    return Error{source + ": more than one YAML document; expected one (remove the extra '---')"};
  }
  Config config = default_config();
  YamlWalk walk(source);
  try {
    if (documents == 1) read_config(walk, root, config);
  } catch (const std::exception& e) {
    // The walk uses no throwing accessors; this is a last guard so a file cannot crash us.
    walk.error(std::string("could not read the document: ") + e.what());
  }
  if (!walk.ok()) return Error{walk.joined()};
  if (Status valid = validate_config(config, source); !valid.ok()) return valid.error();
  return config;
}

Result<Config> load_config_file(const std::filesystem::path& path) {
  auto text = read_config_file(path);
  if (!text) return text.error();
  return parse_config_yaml(*text, path.string());
}

Result<std::string> read_config_file(const std::filesystem::path& path) {
  const std::string name = "config file '" + path.string() + "'";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return Error{name +
                 ": cannot read: " + (ec ? ec.message() : std::string(std::strerror(ENOENT)))};
  }
  if (std::filesystem::is_directory(status)) {
    return Error{name + ": is a directory; expected a YAML file"};
  }
  if (!std::filesystem::is_regular_file(status)) {
    return Error{name + ": is not a regular file; expected a YAML file"};
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) return Error{name + ": cannot read: " + std::strerror(errno)};
  std::string text;
  char buffer[8192];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (text.size() > limits::kMaxConfigFileBytes) {
      return Error{name + ": larger than " + std::to_string(limits::kMaxConfigFileBytes) +
                   " bytes; that is not a configuration file"};
    }
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) return Error{name + ": cannot read: " + std::strerror(errno)};
  return text;
}

Status validate_config(const Config& c, std::string_view source_name) {
  std::vector<std::string> errors;
  auto fail = [&](const std::string& path, const std::string& problem) {
    errors.push_back(std::string(source_name) + ": " + path + ": " + problem);
  };
  if (c.budget_bytes == 0) fail("budget", "must be greater than 0");
  // An auto budget not yet resolved (auto_budget.hpp) is checked against the margin once it is.
  const bool budget_known = !c.budget_auto || c.auto_total_bytes != 0;
  if (budget_known && c.margin_bytes >= c.budget_bytes && c.budget_bytes > 0) {
    fail("margin",
         bytes_text(c.margin_bytes) + " must be less than budget " + bytes_text(c.budget_bytes));
  }
  if (c.sampling.interval < limits::kMinInterval || c.sampling.interval > limits::kMaxInterval) {
    fail("sampling.interval", format_duration(c.sampling.interval) + " is out of range; allowed " +
                                  format_duration(limits::kMinInterval) + " to " +
                                  format_duration(limits::kMaxInterval));
  }
  if (c.sampling.full_resolution_window < c.sampling.interval) {
    fail("sampling.full_resolution_window", format_duration(c.sampling.full_resolution_window) +
                                                " is shorter than sampling.interval " +
                                                format_duration(c.sampling.interval));
  }
  if (c.sampling.bucket < c.sampling.interval) {
    fail("sampling.bucket",
         format_duration(c.sampling.bucket) + " is shorter than sampling.interval " +
             format_duration(c.sampling.interval) + "; a bucket must hold at least one sample");
  }
  // sun_path holds 108 bytes including the terminating NUL.
  if (c.control.socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
    fail("control.socket", "path '" + c.control.socket + "' is " +
                               std::to_string(c.control.socket.size()) +
                               " bytes; a Unix socket path must be shorter than " +
                               std::to_string(sizeof(sockaddr_un{}.sun_path)) + " bytes");
  }
  if (c.control.tcp.enabled && c.control.tcp.token_file.empty()) {
    fail("control.tcp.token_file",
         "required when control.tcp.enabled is true; the TCP listener only serves clients "
         "that present the token from this file");
  }
  if (!c.admission.history.prometheus_url.empty() && c.metrics.job_names == JobNames::kOmit) {
    fail("admission.history.prometheus_url",
         "needs metrics.job_names plain or hash: with omit no node exports which job a peak "
         "belongs to, so the fleet has no history to ask for");
  }
  for (pid_t pid : c.watch) {
    if (pid <= 0 || static_cast<std::uint32_t>(pid) > protocol::kMaxPid)
      fail("watch", "invalid PID " + std::to_string(pid));
  }
  if (errors.empty()) return ok_status();
  std::string joined;
  for (const std::string& e : errors) joined += (joined.empty() ? "" : "\n") + e;
  return Error{joined};
}

}  // namespace ramguard
