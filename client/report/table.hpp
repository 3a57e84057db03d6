#pragma once
// A small table: columns with alignment, rows of raw cells, rendered as aligned text, markdown or
// CSV. Cells are escaped for the target format at render time.

#include <string>
#include <vector>

namespace ramguard::report {

enum class Align { kLeft, kRight };

class Table {
 public:
  void add_column(std::string header, Align align = Align::kLeft);
  // Missing cells render empty; extra cells are ignored.
  void add_row(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  std::string text(const std::string& indent = "") const;
  std::string markdown() const;
  std::string csv() const;

 private:
  struct Column {
    std::string header;
    Align align;
  };
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ramguard::report
