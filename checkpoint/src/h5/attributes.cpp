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

void write_attribute(hid_t object, const std::string& name, std::uint32_t value,
                     const std::filesystem::path& file) {
  write_scalar(object, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value, file);
}

void write_attribute(hid_t object, const std::string& name, const std::vector<std::uint32_t>& values,
                     const std::filesystem::path& file) {
  hsize_t dims[1] = {values.size()};
  Handle space(check_id(H5Screate_simple(1, dims, nullptr), file, "create a 1-D dataspace"),
               H5Sclose);
  auto what = describe("attribute", object, name);
  Handle attribute(check_id(H5Acreate2(object, name.c_str(), H5T_STD_U32LE, space.get(),
                                       H5P_DEFAULT, H5P_DEFAULT),
                            file, "create " + what),
                   H5Aclose);
  if (!values.empty())
    check(H5Awrite(attribute.get(), H5T_NATIVE_UINT32, values.data()), file, "write " + what);
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

void write_fixed_string_attribute(hid_t object, const std::string& name, const std::string& value,
                                  const std::filesystem::path& file) {
  Handle type(check_id(H5Tcopy(H5T_C_S1), file, "copy the string type"), H5Tclose);
  check(H5Tset_size(type.get(), value.size() + 1), file, "size a fixed-length string type");
  check(H5Tset_strpad(type.get(), H5T_STR_NULLTERM), file, "make a null-terminated string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), file, "make a UTF-8 string type");
  write_scalar(object, name, type.get(), type.get(), value.c_str(), file);
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

std::vector<std::uint32_t> read_uint32_array_attribute(hid_t object, const std::string& name,
                                                       const std::filesystem::path& file) {
  auto what = describe("attribute", object, name);
  if (!has_attribute(object, name, file)) throw_format_error(file, "missing " + what);
  Handle attribute(check_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), file, "open " + what),
                   H5Aclose);
  Handle type(check_id(H5Aget_type(attribute.get()), file, "read the type of " + what), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw_format_error(file, fmt::format("{} is not an integer array", what));
  Handle space(check_id(H5Aget_space(attribute.get()), file, "read the dataspace of " + what),
               H5Sclose);
  auto count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw_error(file, "read the size of " + what);
  std::vector<std::uint32_t> values(static_cast<std::size_t>(count));
  if (!values.empty())
    check(H5Aread(attribute.get(), H5T_NATIVE_UINT32, values.data()), file, "read " + what);
  return values;
}

std::vector<std::string> attribute_names(hid_t object, const std::filesystem::path& file) {
  H5O_info_t info{};
  check(H5Oget_info2(object, &info, H5O_INFO_NUM_ATTRS), file, "count attributes");
  bool ordered = false;
  {
    hid_t properties = H5I_INVALID_HID;
    switch (H5Iget_type(object)) {
      case H5I_GROUP: properties = H5Gget_create_plist(object); break;
      case H5I_DATASET: properties = H5Dget_create_plist(object); break;
      default: break;
    }
    if (properties >= 0) {
      unsigned flags = 0;
      ordered = H5Pget_attr_creation_order(properties, &flags) >= 0 &&
                (flags & H5P_CRT_ORDER_INDEXED) != 0;
      H5Pclose(properties);
    }
    H5Eclear2(H5E_DEFAULT);
  }
  auto index = ordered ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    auto length = H5Aget_name_by_idx(object, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (length < 0) throw_error(file, "read an attribute name");
    std::string name(static_cast<std::size_t>(length), '\0');
    if (H5Aget_name_by_idx(object, ".", index, H5_ITER_INC, i, name.data(), name.size() + 1,
                           H5P_DEFAULT) < 0)
      throw_error(file, "read an attribute name");
    names.push_back(std::move(name));
  }
  return names;
}

H5T_class_t attribute_class(hid_t object, const std::string& name,
                            const std::filesystem::path& file) {
  auto what = describe("attribute", object, name);
  Handle attribute(check_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), file, "open " + what),
                   H5Aclose);
  Handle type(check_id(H5Aget_type(attribute.get()), file, "read the type of " + what), H5Tclose);
  return H5Tget_class(type.get());
}

}  // namespace dlx::checkpoint::h5
