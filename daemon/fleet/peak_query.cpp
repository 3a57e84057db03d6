#include "fleet/peak_query.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <charconv>
#include <cmath>

namespace ramguard {
namespace {

// A PromQL double-quoted string: backslash and quote escaped, control bytes as \xNN.
std::string promql_string(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string label_text(const google::protobuf::Struct& metric, const char* name) {
  auto it = metric.fields().find(name);
  return it == metric.fields().end() ? std::string() : it->second.string_value();
}

}  // namespace

std::string peak_promql(std::string_view job_label, std::chrono::nanoseconds lookback) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(lookback).count();
  return "max by (uid, node, instance) (max_over_time(ramguard_job_peak_bytes{ramguard_job=" +
         promql_string(job_label) + "}[" + std::to_string(seconds) + "s]))";
}

std::string query_target(std::string_view promql) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "/api/v1/query?query=";
  for (unsigned char c : promql) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

Result<std::vector<FleetPeak>> parse_peak_reply(const std::string& body) {
  google::protobuf::Struct reply;
  if (!google::protobuf::util::JsonStringToMessage(body, &reply).ok()) {
    return Error{"the answer is not JSON: " + body.substr(0, 120)};
  }
  const auto& fields = reply.fields();
  auto status = fields.find("status");
  if (status == fields.end() || status->second.string_value() != "success") {
    auto error = fields.find("error");
    return Error{"the query failed: " +
                 (error == fields.end() ? std::string("no status") : error->second.string_value())};
  }
  auto data = fields.find("data");
  if (data == fields.end()) return Error{"the answer has no data"};
  const auto& d = data->second.struct_value().fields();
  auto type = d.find("resultType");
  auto result = d.find("result");
  if (type == d.end() || type->second.string_value() != "vector" || result == d.end()) {
    return Error{"the answer is not an instant vector"};
  }
  std::vector<FleetPeak> peaks;
  for (const auto& series : result->second.list_value().values()) {
    const auto& s = series.struct_value().fields();
    auto metric = s.find("metric");
    auto value = s.find("value");
    if (metric == s.end() || value == s.end()) continue;
    const auto& m = metric->second.struct_value();
    const std::string uid_text = label_text(m, "uid");
    std::uint32_t uid = 0;
    auto [end, ec] = std::from_chars(uid_text.data(), uid_text.data() + uid_text.size(), uid);
    if (uid_text.empty() || ec != std::errc{} || end != uid_text.data() + uid_text.size()) continue;
    const auto& pair = value->second.list_value().values();
    if (pair.size() != 2) continue;
    double bytes = 0;
    try {
      bytes = std::stod(pair[1].string_value());
    } catch (const std::exception&) {
      continue;
    }
    if (!std::isfinite(bytes) || bytes < 1 || bytes >= 1.8e19) continue;
    FleetPeak peak;
    peak.uid = uid;
    peak.node = label_text(m, "node");
    if (peak.node.empty()) peak.node = label_text(m, "instance");
    peak.peak_bytes = static_cast<std::uint64_t>(bytes);
    peaks.push_back(std::move(peak));
  }
  return peaks;
}

}  // namespace ramguard
