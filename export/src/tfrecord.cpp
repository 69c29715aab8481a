#include "dlx/export/tfrecord.hpp"

#include <climits>

#include <isa-l/crc.h>

namespace dlx::tensorboard {
namespace {

// ISA-L's crc32_iscsi neither inverts the register on entry nor the result on exit
// (checkpoint/src/crc32c.cpp says the same); records are far below its int length limit.
constexpr std::uint32_t kInvert = 0xFFFFFFFFu;
constexpr std::uint32_t kMaskDelta = 0xa282ead8u;

void append_le(std::string& stream, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) stream.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

std::span<const std::byte> as_bytes(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> bytes) {
  std::uint32_t reg = kInvert;
  while (!bytes.empty()) {
    const auto piece = std::min<std::size_t>(bytes.size(), std::size_t{1} << 30);
    // crc32_iscsi does not write through the pointer; its signature lacks the const.
    auto* data = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(bytes.data()));
    reg = crc32_iscsi(data, static_cast<int>(piece), reg);
    bytes = bytes.subspan(piece);
  }
  return reg ^ kInvert;
}

std::uint32_t mask_crc(std::uint32_t crc) {
  return static_cast<std::uint32_t>(((crc >> 15) | (crc << 17)) + kMaskDelta);
}

void append_tfrecord(std::string& stream, std::string_view data) {
  std::string length;
  append_le(length, data.size(), 8);
  stream += length;
  append_le(stream, mask_crc(crc32c(as_bytes(length))), 4);
  stream += data;
  append_le(stream, mask_crc(crc32c(as_bytes(data))), 4);
}

}  // namespace dlx::tensorboard
