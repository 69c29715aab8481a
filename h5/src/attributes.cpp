// SPDX-License-Identifier: Apache-2.0
#include "dlx/h5/attributes.hpp"

#include <limits>

#include <fmt/format.h>

#include "dataspace.hpp"
#include "dlx/h5/error.hpp"
#include "dlx/h5/handle.hpp"
#include "dlx/h5/limits.hpp"
#include "dlx/h5/objects.hpp"

namespace dlx::h5 {
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

// The number of elements an attribute's dataspace declares, without HDF5's own (unchecked)
// product; throws when it cannot be real.
std::uint64_t declared_elements(hid_t attribute, const std::string& what,
                                const std::filesystem::path& file) {
  Handle space(check_id(H5Aget_space(attribute), file, "read the dataspace of " + what), H5Sclose);
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) return 0;
  std::uint64_t elements = 1;
  for (auto extent : simple_extent_dims(space.get(), what, file))
    if (__builtin_mul_overflow(elements, extent, &elements))
      throw_format_error(file, fmt::format("{} declares more elements than any file holds", what));
  return elements;
}

// An attribute's value is stored in the file: refuses one that declares more bytes than the file
// has, or than kMaxAttributeBytes, before anything is allocated for it.
void require_storable(hid_t object, std::uint64_t elements, std::uint64_t element_bytes,
                      const std::string& what, const std::filesystem::path& file) {
  std::uint64_t bytes = 0;
  bool overflow = __builtin_mul_overflow(elements, element_bytes, &bytes);
  if (overflow || bytes > kMaxAttributeBytes)
    throw_format_error(file, fmt::format("{} declares {} x {} bytes, more than dlx's limit of {} "
                                         "bytes for one attribute",
                                         what, elements, element_bytes, kMaxAttributeBytes));
  if (auto file_bytes = file_bytes_of(object, file); bytes > file_bytes)
    throw_format_error(file, fmt::format("{} declares {} bytes, more than the whole file ({} "
                                         "bytes): damaged or truncated",
                                         what, bytes, file_bytes));
}

// Opens a one-element attribute of the expected class; names what is wrong otherwise.
Handle open_scalar(hid_t object, const std::string& name, H5T_class_t expected,
                   const std::filesystem::path& file) {
  auto what = describe("attribute", object, name);
  if (!has_attribute(object, name, file))
    throw_format_error(file, fmt::format("missing {}", what));
  Handle attribute(check_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), file, "open " + what),
                   H5Aclose);
  if (declared_elements(attribute.get(), what, file) != 1)
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

void delete_attributes(hid_t object, const std::filesystem::path& file) {
  for (;;) {
    H5O_info_t info{};
    check(H5Oget_info2(object, &info, H5O_INFO_NUM_ATTRS), file, "count the attributes of " + object_path(object));
    if (info.num_attrs == 0) return;
    check(H5Adelete_by_idx(object, ".", H5_INDEX_NAME, H5_ITER_NATIVE, 0, H5P_DEFAULT), file,
          "delete an attribute of " + object_path(object));
  }
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
    // HDF5 allocated it from the string's own bytes in the file: bounded by the file already.
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    if (value.size() > kMaxAttributeBytes)
      throw_format_error(file, fmt::format("{} is a string of {} bytes, more than dlx's limit of "
                                           "{} bytes for one attribute",
                                           what, value.size(), kMaxAttributeBytes));
    return value;
  }
  // Fixed-length (checkpoints; other tools): read the bytes, drop the padding.
  auto size = H5Tget_size(stored.get());
  if (size == 0) throw_error(file, "read the size of " + what);
  require_storable(object, 1, size, what, file);
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
  auto count = declared_elements(attribute.get(), what, file);
  require_storable(object, count, H5Tget_size(type.get()), what, file);
  std::vector<std::uint32_t> values(static_cast<std::size_t>(count));
  if (!values.empty())
    check(H5Aread(attribute.get(), H5T_NATIVE_UINT32, values.data()), file, "read " + what);
  return values;
}

namespace {

struct AttributeCollector {
  std::vector<std::string> names;
  bool too_many = false;
};

herr_t collect_attribute(hid_t, const char* name, const H5A_info_t*, void* data) {
  auto* collector = static_cast<AttributeCollector*>(data);
  if (collector->names.size() >= kMaxObjects) {
    collector->too_many = true;
    return 1;  // stop: the caller refuses the object
  }
  collector->names.emplace_back(name);
  return 0;
}

}  // namespace

std::uint64_t attribute_elements(hid_t object, const std::string& name,
                                 const std::filesystem::path& file) {
  auto what = describe("attribute", object, name);
  if (!has_attribute(object, name, file)) throw_format_error(file, "missing " + what);
  Handle attribute(check_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), file, "open " + what),
                   H5Aclose);
  return declared_elements(attribute.get(), what, file);
}

std::vector<std::string> attribute_names(hid_t object, const std::filesystem::path& file) {
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
  // One pass (H5Aiterate2): asking for the i-th name n times rebuilds the object's attribute
  // table each time in compact storage, quadratic in a crafted header.
  AttributeCollector collector;
  hsize_t position = 0;
  check(H5Aiterate2(object, ordered ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME, H5_ITER_INC, &position,
                    collect_attribute, &collector),
        file, "list the attributes of " + object_path(object));
  if (collector.too_many)
    throw_format_error(file, fmt::format("{} has more than {} attributes (dlx's limit)",
                                         object_path(object), kMaxObjects));
  return std::move(collector.names);
}

H5T_class_t attribute_class(hid_t object, const std::string& name,
                            const std::filesystem::path& file) {
  auto what = describe("attribute", object, name);
  Handle attribute(check_id(H5Aopen(object, name.c_str(), H5P_DEFAULT), file, "open " + what),
                   H5Aclose);
  Handle type(check_id(H5Aget_type(attribute.get()), file, "read the type of " + what), H5Tclose);
  return H5Tget_class(type.get());
}

}  // namespace dlx::h5
