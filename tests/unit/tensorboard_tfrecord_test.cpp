// SPDX-License-Identifier: Apache-2.0
// TFRecord framing of TensorBoard event files: CRC-32C, its mask and the record layout, against
// values computed apart from ISA-L (a bitwise CRC-32C in Python, and the standard check value).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "dlx/common/crc32c.hpp"
#include "dlx/export/tfrecord.hpp"

using namespace dlx::tensorboard;
using dlx::crc32c;

namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

std::uint64_t read_le(const std::string& stream, std::size_t offset, int bytes) {
  std::uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(stream[offset + static_cast<std::size_t>(i)]);
  return value;
}

}  // namespace

TEST_CASE("CRC-32C: the standard check value", "[tensorboard][tfrecord]") {
  CHECK(crc32c(bytes_of("123456789")) == 0xe3069283u);  // RFC 3720 / the CRC catalogue's "check"
  CHECK(crc32c(bytes_of("")) == 0u);
}

TEST_CASE("masked CRC-32C: rotate right 15 bits, add 0xa282ead8", "[tensorboard][tfrecord]") {
  CHECK(mask_crc(0xe3069283u) == 0xc78ab0e5u);
  CHECK(mask_crc(crc32c(bytes_of(std::string(8, '\0')))) == 0x07980329u);  // the length bytes of an empty record
  CHECK(mask_crc(0) == 0xa282ead8u);
  CHECK(mask_crc(0xffffffffu) == 0xa282ead7u);  // the addition wraps at 32 bits
}

TEST_CASE("a TFRecord: length, masked CRC of the length, data, masked CRC of the data", "[tensorboard][tfrecord]") {
  std::string stream;
  append_tfrecord(stream, "abc");
  REQUIRE(stream.size() == 8 + 4 + 3 + 4);
  CHECK(read_le(stream, 0, 8) == 3);
  CHECK(read_le(stream, 8, 4) == 0x0e4999b0u);
  CHECK(stream.substr(12, 3) == "abc");
  CHECK(read_le(stream, 15, 4) == 0x21f1576eu);

  SECTION("records follow each other; an empty one is 16 bytes") {
    append_tfrecord(stream, "");
    REQUIRE(stream.size() == 19 + 16);
    CHECK(read_le(stream, 19, 8) == 0);
    CHECK(read_le(stream, 27, 4) == 0x07980329u);
    CHECK(read_le(stream, 31, 4) == 0xa282ead8u);  // the CRC of no bytes is 0
  }
}
