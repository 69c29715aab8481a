#include "dlx/checkpoint/h5/attributes.hpp"

#include <limits>

#include <fmt/format.h>

#include "dlx/checkpoint/h5/error.hpp"
#include "dlx/checkpoint/h5/handle.hpp"
#include "dlx/checkpoint/h5/objects.hpp"

namespace dlx::checkpoint::h5 {
namespace {

Handle utf8_string_type(const std::filesystem::path& file) {
  Handle type(check_id(H5Tcopy(H5T_C_S1), file, "copy the string type"), H5Tclose);
  check(H5Tset_size(type.get(), H5T_VARIABLE), file, "make a variable-length string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), file, "make a UTF-8 string type");
  return type;
}

void write_scalar(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                  const void* value, const std::filesystem::path& file) {
  Handle space(check_id(H5Screate(H5S_SCALAR), file, "create a scalar dataspace"), H5Sclose);
  auto what = describe("attribute", object, name);
  Handle attribute(
      check_id(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
               file, "create " + what),
      H5Aclose);
  check(H5Awrite(attribute.get(), memory_type, value), file, "write " + what);
}

// Opens a one-element attribute of the expected class; names what is wrong otherwise.
Handle open_scalar(hid_t object, const std::string& name, H5T_class_t expected,
                   const std::filesystem::path& file) {
  auto what = describe("attribute", object, name);
  if (!has_attribute(object, name, file))
    throw_format_error(file, fmt::format("missing {} (not a dlx trial record?)", what));
  Handle attribute(check_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), file, "open " + what),
                   H5Aclose);
  Handle space(check_id(H5Aget_space(attribute.get()), file, "read the dataspace of " + what),
               H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1)
    throw_format_error(file, fmt::format("{} is not a single value", what));
  Handle type(check_id(H5Aget_type(attribute.get()), file, "read the type of " + what), H5Tclose);
  auto actual = H5Tget_class(type.get());
  bool numeric = expected != H5T_STRING;
  bool accepted = numeric ? (actual == H5T_INTEGER || actual == H5T_FLOAT) : actual == expected;
  if (!accepted)
    throw_format_error(file, fmt::format("{} has the wrong type (expected {})", what,
                                         numeric ? "a number" : "a string"));
  return attribute;
}

}  // namespace

void write_attribute(hid_t object, const std::string& name, std::int32_t value,
                     const std::filesystem::path& file) {
  write_scalar(object, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &value, file);
}

void write_attribute(hid_t object, const std::string& name, std::int64_t value,
                     const std::filesystem::path& file) {
  write_scalar(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, file);
}

void write_attribute(hid_t object, const std::string& name, std::uint64_t value,
                     const std::filesystem::path& file) {
  write_scalar(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value, file);
}

void write_attribute(hid_t object, const std::string& name, double value,
                     const std::filesystem::path& file) {
  write_scalar(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, file);
}

void write_attribute(hid_t object, const std::string& name, const std::string& value,
                     const std::filesystem::path& file) {
  auto type = utf8_string_type(file);
  const char* text = value.c_str();
  write_scalar(object, name, type.get(), type.get(), &text, file);
}

void write_flag_attribute(hid_t object, const std::string& name, bool value,
                          const std::filesystem::path& file) {
  std::int8_t flag = value ? 1 : 0;
  write_scalar(object, name, H5T_STD_I8LE, H5T_NATIVE_INT8, &flag, file);
}

bool has_attribute(hid_t object, const std::string& name, const std::filesystem::path& file) {
  return check_tri(H5Aexists(object, name.c_str()), file,
                   "look up " + describe("attribute", object, name)) > 0;
}

std::int64_t read_int64_attribute(hid_t object, const std::string& name,
                                  const std::filesystem::path& file) {
  auto attribute = open_scalar(object, name, H5T_INTEGER, file);
  std::int64_t value = 0;
  check(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value), file,
        "read " + describe("attribute", object, name));
  return value;
}

int read_int_attribute(hid_t object, const std::string& name, const std::filesystem::path& file) {
  auto value = read_int64_attribute(object, name, file);
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
    throw_format_error(
        file, fmt::format("{} is out of range: {}", describe("attribute", object, name), value));
  return static_cast<int>(value);
}

double read_double_attribute(hid_t object, const std::string& name,
                             const std::filesystem::path& file) {
  auto attribute = open_scalar(object, name, H5T_FLOAT, file);
  double value = 0;
  check(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value), file,
        "read " + describe("attribute", object, name));
  return value;
}

std::string read_string_attribute(hid_t object, const std::string& name,
                                  const std::filesystem::path& file) {
  auto attribute = open_scalar(object, name, H5T_STRING, file);
  auto what = describe("attribute", object, name);
  Handle stored(check_id(H5Aget_type(attribute.get()), file, "read the type of " + what), H5Tclose);
  if (check_tri(H5Tis_variable_str(stored.get()), file, "inspect the type of " + what) > 0) {
    auto type = utf8_string_type(file);
    char* text = nullptr;
    check(H5Aread(attribute.get(), type.get(), &text), file, "read " + what);
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  // Fixed-length (written by another tool): read the bytes, drop the padding.
  auto size = H5Tget_size(stored.get());
  if (size == 0) throw_error(file, "read the size of " + what);
  std::string value(size, '\0');
  check(H5Aread(attribute.get(), stored.get(), value.data()), file, "read " + what);
  if (auto end = value.find('\0'); end != std::string::npos) value.resize(end);
  return value;
}

}  // namespace dlx::checkpoint::h5
