// SPDX-License-Identifier: Apache-2.0
#include "dlx/export/tfrecord.hpp"

#include <cstdint>

#include "dlx/common/crc32c.hpp"
#include "dlx/common/little_endian.hpp"

namespace dlx::tensorboard {
namespace {

constexpr std::uint32_t kMaskDelta = 0xa282ead8u;

}  // namespace

std::uint32_t mask_crc(std::uint32_t crc) {
  return static_cast<std::uint32_t>(((crc >> 15) | (crc << 17)) + kMaskDelta);
}

void append_tfrecord(std::string& stream, std::string_view data) {
  std::string length;
  append_little_endian<std::uint64_t>(length, data.size());
  stream += length;
  append_little_endian(stream, mask_crc(crc32c(length)));
  stream += data;
  append_little_endian(stream, mask_crc(crc32c(data)));
}

}  // namespace dlx::tensorboard
