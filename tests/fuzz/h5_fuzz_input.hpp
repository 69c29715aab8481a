// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fuzzer's bytes, read front to back as a small program (h5_fuzz_mutate.hpp describes it);
// past the end every read is 0, so any input is a complete program. Front to back, unlike
// libFuzzer's FuzzedDataProvider, so that seed programs can be written by hand
// (tests/fuzz/h5_seeds.py).
#include <cstddef>
#include <cstdint>
#include <string>

namespace dlx::fuzz {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return u16() | (static_cast<std::uint32_t>(u16()) << 16); }
  std::uint64_t u64() { return u32() | (static_cast<std::uint64_t>(u32()) << 32); }
  // One byte, as a choice among `count` (> 0).
  std::size_t pick(std::size_t count) { return u8() % count; }
  // `length` bytes (fewer at the end of the input).
  std::string bytes(std::size_t length) {
    std::string out;
    while (out.size() < length && at_ < size_) out.push_back(static_cast<char>(data_[at_++]));
    return out;
  }
  bool done() const { return at_ >= size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace dlx::fuzz
