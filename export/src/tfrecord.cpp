#include "dlx/export/tfrecord.hpp"

#include "dlx/common/crc32c.hpp"

namespace dlx::tensorboard {
namespace {

constexpr std::uint32_t kMaskDelta = 0xa282ead8u;

void append_le(std::string& stream, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) stream.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

}  // namespace

std::uint32_t mask_crc(std::uint32_t crc) {
  return static_cast<std::uint32_t>(((crc >> 15) | (crc << 17)) + kMaskDelta);
}

void append_tfrecord(std::string& stream, std::string_view data) {
  std::string length;
  append_le(length, data.size(), 8);
  stream += length;
  append_le(stream, mask_crc(crc32c(length)), 4);
  stream += data;
  append_le(stream, mask_crc(crc32c(data)), 4);
}

}  // namespace dlx::tensorboard
