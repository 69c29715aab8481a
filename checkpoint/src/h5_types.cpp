// SPDX-License-Identifier: Apache-2.0
#include "h5_types.hpp"

#include "dlx/h5/error.hpp"

namespace dlx::checkpoint {

namespace {

struct FloatLayout {
  std::size_t sign, exponent_position, exponent_bits, mantissa_bits, bias;
};

// float16: 1-5-10, bias 15 (IEEE 754 binary16); bfloat16: 1-8-7, bias 127 (the top half of a
// float32).
constexpr FloatLayout kHalf{15, 10, 5, 10, 15};
constexpr FloatLayout kBrain{15, 7, 8, 7, 127};

h5::Handle sixteen_bit_float(const FloatLayout& layout, const std::filesystem::path& file) {
  h5::Handle type(h5::check_id(H5Tcopy(H5T_IEEE_F32LE), file, "copy the float type"), H5Tclose);
  auto id = type.get();
  const char* what = "define a 16-bit float type";
  h5::check(H5Tset_fields(id, layout.sign, layout.exponent_position, layout.exponent_bits, 0,
                      layout.mantissa_bits),
        file, what);
  h5::check(H5Tset_precision(id, 16), file, what);
  h5::check(H5Tset_size(id, 2), file, what);
  h5::check(H5Tset_ebias(id, layout.bias), file, what);
  return type;
}

hid_t predefined(DType dtype) {
  switch (dtype) {
    case DType::float32: return H5T_IEEE_F32LE;
    case DType::float64: return H5T_IEEE_F64LE;
    case DType::int8: return H5T_STD_I8LE;
    case DType::int16: return H5T_STD_I16LE;
    case DType::int32: return H5T_STD_I32LE;
    case DType::int64: return H5T_STD_I64LE;
    case DType::uint8: return H5T_STD_U8LE;
    case DType::uint16: return H5T_STD_U16LE;
    case DType::uint32: return H5T_STD_U32LE;
    case DType::uint64: return H5T_STD_U64LE;
    case DType::float16:
    case DType::bfloat16: break;
  }
  return H5I_INVALID_HID;
}

bool float_matches(hid_t type, const FloatLayout& layout) {
  std::size_t sign = 0, exponent_position = 0, exponent_bits = 0, mantissa_position = 0,
              mantissa_bits = 0;
  if (H5Tget_fields(type, &sign, &exponent_position, &exponent_bits, &mantissa_position,
                    &mantissa_bits) < 0)
    return false;
  return H5Tget_size(type) == 2 && sign == layout.sign &&
         exponent_position == layout.exponent_position && exponent_bits == layout.exponent_bits &&
         mantissa_position == 0 && mantissa_bits == layout.mantissa_bits &&
         H5Tget_ebias(type) == layout.bias;
}

}  // namespace

h5::Handle file_type_of(DType dtype, const std::filesystem::path& file) {
  if (dtype == DType::float16) return sixteen_bit_float(kHalf, file);
  if (dtype == DType::bfloat16) return sixteen_bit_float(kBrain, file);
  return h5::Handle(h5::check_id(H5Tcopy(predefined(dtype)), file, "copy a predefined type"), H5Tclose);
}

bool type_matches(hid_t type, DType dtype) {
  if (dtype == DType::float16) return H5Tget_class(type) == H5T_FLOAT && float_matches(type, kHalf);
  if (dtype == DType::bfloat16)
    return H5Tget_class(type) == H5T_FLOAT && float_matches(type, kBrain);
  auto result = H5Tequal(type, predefined(dtype));
  if (result < 0) H5Eclear2(H5E_DEFAULT);
  return result > 0;
}

}  // namespace dlx::checkpoint
