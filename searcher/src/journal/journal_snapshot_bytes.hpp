// SPDX-License-Identifier: Apache-2.0
#pragma once
// Little-endian fixed-width integers, doubles (their IEEE-754 bits, so exact) and length-prefixed
// strings: the journal snapshot's binary encoding (layout in journal_snapshot.hpp). The reader
// checks every length against what is left, and every string for UTF-8, and throws JournalError
// naming `what` and the byte.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "dlx/common/little_endian.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/searcher/journal.hpp"

namespace dlx::searcher::detail {

class ByteWriter {
 public:
  void u8(std::uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void u32(std::uint32_t value) { append_little_endian(out_, value); }
  void u64(std::uint64_t value) { append_little_endian(out_, value); }
  void i64(std::int64_t value) { u64(static_cast<std::uint64_t>(value)); }
  void f64(double value) { u64(std::bit_cast<std::uint64_t>(value)); }
  void boolean(bool value) { u8(value ? 1 : 0); }
  void str(std::string_view value) {
    u64(value.size());
    out_.append(value);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class ByteReader {
 public:
  ByteReader(std::string_view bytes, std::string what) : in_(bytes), what_(std::move(what)) {}
  std::uint8_t u8() {
    need(1);
    return static_cast<std::uint8_t>(in_[at_++]);
  }
  std::uint32_t u32() { return fixed<std::uint32_t>(); }
  std::uint64_t u64() { return fixed<std::uint64_t>(); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  int i32() {
    const auto value = i64();
    if (value < INT32_MIN || value > INT32_MAX) fail(fmt::format("value {} out of range", value));
    return static_cast<int>(value);
  }
  double f64() { return std::bit_cast<double>(u64()); }
  bool boolean() {
    const auto value = u8();
    if (value > 1) fail(fmt::format("{} is not a boolean", value));
    return value == 1;
  }
  // Every string of the snapshot is text that ends up in JSON (ids, reasons, hyperparameters), whose
  // encoder throws on bytes that are not UTF-8: checked here, where the byte offset is known.
  std::string_view str() {
    const auto size = u64();
    need(size);
    const auto value = in_.substr(at_, static_cast<std::size_t>(size));
    if (!config::is_utf8(value)) fail("a string that is not UTF-8");
    at_ += static_cast<std::size_t>(size);
    return value;
  }
  // A count of items that each take at least `min_bytes`: bounded by what is left, so a corrupt
  // count cannot make the caller reserve or loop without end.
  std::size_t count(std::size_t min_bytes) {
    const auto value = u64();
    if (value > (in_.size() - at_) / std::max<std::size_t>(min_bytes, 1)) fail(fmt::format("count {} too large", value));
    return static_cast<std::size_t>(value);
  }
  bool done() const { return at_ == in_.size(); }
  std::size_t at() const { return at_; }
  [[noreturn]] void fail(const std::string& why) const {
    throw JournalError(fmt::format("{}: {} at byte {}", what_, why, at_));
  }

 private:
  template <typename T>
  T fixed() {
    need(sizeof(T));
    const auto value = read_little_endian<T>(in_, at_);
    at_ += sizeof(T);
    return value;
  }
  void need(std::uint64_t bytes) const {
    if (bytes > in_.size() - at_) fail(fmt::format("ends early (wanted {} more bytes, {} left)", bytes, in_.size() - at_));
  }
  std::string_view in_;
  std::string what_;
  std::size_t at_ = 0;
};

}  // namespace dlx::searcher::detail
