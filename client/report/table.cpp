#include "report/table.hpp"

#include <algorithm>

#include "report/format.hpp"

namespace ramguard::report {

void Table::add_column(std::string header, Align align) {
  columns_.push_back({std::move(header), align});
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::text(const std::string& indent) const {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header;
  for (const Column& c : columns_) header.push_back(escape_text(c.header));
  cells.push_back(header);
  for (const auto& row : rows_) {
    std::vector<std::string> escaped;
    for (const std::string& cell : row) escaped.push_back(escape_text(cell));
    cells.push_back(std::move(escaped));
  }
  std::vector<std::size_t> widths(columns_.size(), 0);
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - display_width(row[i]), ' ');
      if (i > 0) line += "  ";
      line += columns_[i].align == Align::kRight ? pad + row[i] : row[i] + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(cells[0]);
  std::vector<std::string> rule;
  for (std::size_t w : widths) rule.emplace_back(w, '-');
  emit(rule);
  for (std::size_t r = 1; r < cells.size(); ++r) emit(cells[r]);
  return out;
}

std::string Table::markdown() const {
  std::string out = "|";
  for (const Column& c : columns_) out += " " + escape_markdown(c.header) + " |";
  out += "\n|";
  for (const Column& c : columns_) out += c.align == Align::kRight ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : rows_) {
    out += "|";
    for (const std::string& cell : row) out += " " + escape_markdown(cell) + " |";
    out += "\n";
  }
  return out;
}

std::string Table::csv() const {
  std::string out;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    out += (i ? "," : "") + escape_csv(columns_[i].header);
  }
  out += "\r\n";
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + escape_csv(row[i]);
    out += "\r\n";
  }
  return out;
}

}  // namespace ramguard::report
