// SPDX-License-Identifier: Apache-2.0
#pragma once
// TFRecord framing, the container of TensorBoard's event files. Each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
//   data | uint32 masked CRC-32C of the data (both CRCs little-endian).
// The CRCs are "masked" (rotated right by 15 bits, plus a constant) because a CRC computed over
// data that itself holds CRCs is weak; TensorFlow defined the mask and every reader expects it.
// The CRC is dlx::crc32c (dlx/common/crc32c.hpp).
#include <cstdint>
#include <string>
#include <string_view>

namespace dlx::tensorboard {

// ((crc >> 15) | (crc << 17)) + 0xa282ead8, in 32-bit arithmetic.
std::uint32_t mask_crc(std::uint32_t crc);

// One TFRecord holding `data`, appended to `stream`.
void append_tfrecord(std::string& stream, std::string_view data);

}  // namespace dlx::tensorboard
