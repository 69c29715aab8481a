// SPDX-License-Identifier: Apache-2.0
#pragma once
// Fixed-width unsigned integers as little-endian bytes whatever the host's order: the journal's
// record headers and its snapshot, the per-rank checkpoint state's header length, TensorBoard's
// TFRecord framing. One append per value, not one per byte (the journal snapshot encodes millions).
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace dlx {

// Appends the sizeof(T) little-endian bytes of `value`.
template <typename T>
void append_little_endian(std::string& out, T value) {
  static_assert(std::is_unsigned_v<T> && sizeof(T) > 1);
  char bytes[sizeof(T)];
  for (std::size_t k = 0; k < sizeof(T); ++k) bytes[k] = static_cast<char>((value >> (8 * k)) & 0xFFu);
  out.append(bytes, sizeof(T));
}

// The T whose little-endian bytes start at `at`; the caller has checked that sizeof(T) bytes are
// there.
template <typename T>
T read_little_endian(std::string_view bytes, std::size_t at = 0) {
  static_assert(std::is_unsigned_v<T> && sizeof(T) > 1);
  T value = 0;
  for (std::size_t k = sizeof(T); k-- > 0;) {
    value = static_cast<T>((value << 8) | static_cast<unsigned char>(bytes[at + k]));
  }
  return value;
}

}  // namespace dlx
