// SPDX-License-Identifier: Apache-2.0
#pragma once
// Fixed-column output in the nccl-tests manner: '#' lines for metadata, aligned data rows.
// Every header and cell is shown through config::printable(): a hyperparameter value or a reason
// holding a newline or an escape sequence cannot add a row or act on the terminal.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlx::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> row);
  // The header line starts with '#'; columns are padded to their widest cell.
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// A hyperparameter value for a cell: strings bare, floats in %g form, the rest as JSON.
std::string format_value(const nlohmann::ordered_json& value);

// "1 trial", "0 trials", "3 trials": `count` and the noun, plural unless the count is 1 (`plural`
// where adding an 's' is wrong).
std::string counted(std::int64_t count, const std::string& noun, const std::string& plural = "");

}  // namespace dlx::cli
