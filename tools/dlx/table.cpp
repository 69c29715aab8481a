// SPDX-License-Identifier: Apache-2.0
#include "table.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"

namespace dlx::cli {

namespace {

std::vector<std::string> printable_cells(std::vector<std::string> cells) {
  for (auto& cell : cells) cell = config::printable(cell);
  return cells;
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(printable_cells(std::move(headers))) {}

void Table::add_row(std::vector<std::string> row) { rows_.push_back(printable_cells(std::move(row))); }

std::string Table::render() const {
  std::vector<std::size_t> widths(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) widths[c] = headers_[c].size() + (c == 0 ? 2 : 0);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string text;
    for (std::size_t c = 0; c < widths.size(); ++c) {
      std::string value = c < cells.size() ? cells[c] : "";
      if (header && c == 0) value = "# " + value;
      text += fmt::format("{:<{}}", value, widths[c]);
      if (c + 1 < widths.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(headers_, true);
  for (const auto& row : rows_) line(row, false);
  return out;
}

std::string format_value(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return fmt::format("{:.6g}", value.get<double>());
  // A list or mapping (a Determined hyperparameter may be any YAML value) as compact JSON, cut so
  // that one value cannot widen the whole table.
  if (value.is_structured()) {
    return config::abbreviated(value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), 48);
  }
  return value.dump();
}

std::string counted(std::int64_t count, const std::string& noun, const std::string& plural) {
  if (count == 1) return "1 " + noun;
  return fmt::format("{} {}", count, plural.empty() ? noun + "s" : plural);
}

}  // namespace dlx::cli
