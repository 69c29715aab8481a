// SPDX-License-Identifier: Apache-2.0
#include "h5_table.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "dlx/h5/error.hpp"
#include "dlx/h5/handle.hpp"

namespace dlx::summary::detail {


namespace {

h5::Handle string_type(const std::filesystem::path& file) {
  h5::Handle type(h5::check_id(H5Tcopy(H5T_C_S1), file, "copy the string type"), H5Tclose);
  h5::check(H5Tset_size(type.get(), H5T_VARIABLE), file, "make a variable-length string type");
  h5::check(H5Tset_cset(type.get(), H5T_CSET_UTF8), file, "set the string type to UTF-8");
  return type;
}

std::size_t row_count(const TableColumn& column) {
  return std::visit([](const auto& values) { return values.size(); }, column.values);
}

// Each member is 8 bytes (int64, double, or a char* to a string), packed in column order.
constexpr std::size_t kMemberSize = 8;
static_assert(sizeof(const char*) == kMemberSize);

}  // namespace

void write_table(hid_t parent, const std::string& name, const std::vector<TableColumn>& columns,
                 const std::filesystem::path& file) {
  const std::size_t rows = columns.empty() ? 0 : row_count(columns.front());
  for (const auto& column : columns) {
    if (row_count(column) != rows) {
      h5::throw_format_error(file, fmt::format("table {}: column {} has {} rows, not {}", name, column.name,
                                               row_count(column), rows));
    }
  }
  const std::size_t row_size = kMemberSize * std::max<std::size_t>(columns.size(), 1);
  const auto strings = string_type(file);
  h5::Handle type(h5::check_id(H5Tcreate(H5T_COMPOUND, row_size), file, "create a compound type"), H5Tclose);
  std::vector<unsigned char> buffer(rows * row_size);
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const std::size_t offset = c * kMemberSize;
    const auto& column = columns[c];
    hid_t member = H5T_NATIVE_INT64;
    if (std::holds_alternative<std::vector<double>>(column.values)) member = H5T_NATIVE_DOUBLE;
    if (std::holds_alternative<std::vector<std::string>>(column.values)) member = strings.get();
    h5::check(H5Tinsert(type.get(), column.name.c_str(), offset, member), file,
              fmt::format("add column {} to table {}", column.name, name));
    std::visit(
        [&](const auto& values) {
          for (std::size_t r = 0; r < rows; ++r) {
            unsigned char* cell = buffer.data() + r * row_size + offset;
            if constexpr (std::is_same_v<std::decay_t<decltype(values)>, std::vector<std::string>>) {
              const char* text = values[r].c_str();  // HDF5 copies the string at H5Dwrite
              std::memcpy(cell, &text, kMemberSize);
            } else {
              std::memcpy(cell, &values[r], kMemberSize);
            }
          }
        },
        column.values);
  }
  const hsize_t extent[1] = {rows};
  h5::Handle space(h5::check_id(H5Screate_simple(1, extent, nullptr), file, "create a dataspace"), H5Sclose);
  h5::Handle dataset(h5::check_id(H5Dcreate2(parent, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                             H5P_DEFAULT, H5P_DEFAULT),
                                  file, fmt::format("create table {}", name)),
                     H5Dclose);
  if (rows > 0) {
    h5::check(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()), file,
              fmt::format("write table {}", name));
  }
}

void write_text(hid_t parent, const std::string& name, const std::string& text,
                const std::filesystem::path& file) {
  const auto type = string_type(file);
  h5::Handle space(h5::check_id(H5Screate(H5S_SCALAR), file, "create a dataspace"), H5Sclose);
  h5::Handle dataset(h5::check_id(H5Dcreate2(parent, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                             H5P_DEFAULT, H5P_DEFAULT),
                                  file, fmt::format("create dataset {}", name)),
                     H5Dclose);
  const char* data = text.c_str();
  h5::check(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &data), file,
            fmt::format("write dataset {}", name));
}

void write_external_link(hid_t parent, const std::string& name, const std::string& target_file,
                         const std::filesystem::path& file) {
  h5::check(H5Lcreate_external(target_file.c_str(), "/", parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT), file,
            fmt::format("link {} to {}", name, target_file));
}

}  // namespace dlx::summary::detail
