#pragma once
// Reads tests/data/units_cases.tsv, the unit cases the C++ and Python tests share.

#include <gtest/gtest.h>

#include <charconv>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ramguard::testing {

struct UnitsCase {
  std::string kind;
  std::string input;     // unquoted
  std::string expected;  // unquoted
  int line = 0;
};

// "\"a\\tb\"" -> "a<TAB>b"; a bare field stays as it is.
inline std::string unquote(std::string_view field) {
  if (field.size() < 2 || field.front() != '"' || field.back() != '"') return std::string(field);
  field = field.substr(1, field.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 1 < field.size() && field[i + 1] == 't') {
      out.push_back('\t');
      ++i;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

inline std::vector<UnitsCase> read_units_cases() {
  std::ifstream in(RAMGUARD_UNITS_CASES);
  if (!in) throw std::runtime_error("cannot read " + std::string(RAMGUARD_UNITS_CASES));
  std::vector<UnitsCase> cases;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line.front() == '#') continue;
    const auto tab1 = line.find('\t');
    const auto tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos || line.find('\t', tab2 + 1) != std::string::npos) {
      throw std::runtime_error("units_cases.tsv:" + std::to_string(number) +
                               ": expected three tab-separated columns");
    }
    cases.push_back({line.substr(0, tab1), unquote(line.substr(tab1 + 1, tab2 - tab1 - 1)),
                     unquote(line.substr(tab2 + 1)), number});
  }
  return cases;
}

template <typename T>
T number(const std::string& text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw std::runtime_error("not a number in units_cases.tsv: " + text);
  }
  return value;
}

inline std::string where(const UnitsCase& c) {
  return "units_cases.tsv:" + std::to_string(c.line) + " " + c.kind + " '" + c.input + "'";
}

}  // namespace ramguard::testing
