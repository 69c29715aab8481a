// SPDX-License-Identifier: Apache-2.0
#pragma once
// A table as HDF5 tools show one: a 1-D dataset of a compound type, one member per column
// (int64, float64 or variable-length UTF-8 string). h5dump prints each row as a record, HDFView
// opens it as a spreadsheet, h5py returns a NumPy structured array (strings as bytes objects).
#include <cstdint>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include <hdf5.h>

namespace dlx::summary::detail {

struct TableColumn {
  std::string name;
  std::variant<std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>> values;
};

// Writes dataset `name` below `parent`; every column must have the same number of rows.
void write_table(hid_t parent, const std::string& name, const std::vector<TableColumn>& columns,
                 const std::filesystem::path& file);

// A scalar dataset holding one variable-length UTF-8 string (long text, such as a YAML file).
void write_text(hid_t parent, const std::string& name, const std::string& text,
                const std::filesystem::path& file);

// An external link `name` below `parent` to the root of `target_file` (a path relative to
// the directory of the file being written, or absolute).
void write_external_link(hid_t parent, const std::string& name, const std::string& target_file,
                         const std::filesystem::path& file);

}  // namespace dlx::summary::detail
