#pragma once
// A minimal streaming JSON writer with fixed key order, for stable machine output. Numbers are
// written exactly (integers as integers, doubles in shortest round-trip form); NaN and infinities,
// which JSON cannot carry, become null.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "report/format.hpp"

namespace ramguard::report {

class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& key(std::string_view name) {
    separate();
    out_ += "\"" + escape_json(name) + "\":";
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view text) {
    separate();
    out_ += "\"" + escape_json(text) + "\"";
    return *this;
  }
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(bool b) {
    separate();
    out_ += b ? "true" : "false";
    return *this;
  }
  JsonWriter& value(std::uint64_t n) { return raw(std::to_string(n)); }
  JsonWriter& value(std::int64_t n) { return raw(std::to_string(n)); }
  JsonWriter& value(std::uint32_t n) { return raw(std::to_string(n)); }
  JsonWriter& value(double d) {
    if (!std::isfinite(d)) return null();
    char buf[64];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, d);
    if (ec != std::errc()) return null();
    return raw(std::string(buf, ptr));
  }
  JsonWriter& null() { return raw("null"); }
  // A value that is already JSON (another renderer's output), inserted as it is.
  JsonWriter& json(std::string_view text) { return raw(std::string(text)); }

  // Convenience: "name": value.
  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  std::string str() const { return out_ + "\n"; }

 private:
  JsonWriter& raw(const std::string& text) {
    separate();
    out_ += text;
    return *this;
  }
  JsonWriter& open(char c) {
    separate();
    out_.push_back(c);
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    out_.push_back(c);
    if (!first_.empty()) first_.pop_back();
    return *this;
  }
  // Writes the comma between members unless this value follows its key.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

// Verdicts as an array of objects (kind, severity, passed, cleared, round, phase, summary,
// at_unix_ms, figures), shared by the report and the comparison.
void write_verdicts(JsonWriter& w, const google::protobuf::RepeatedPtrField<v1::Verdict>& list);

}  // namespace ramguard::report
