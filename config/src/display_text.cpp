// SPDX-License-Identifier: Apache-2.0
#include "dlx/config/display_text.hpp"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace dlx::config {

namespace {

// The code point of the well-formed UTF-8 sequence at text[at] and its length in bytes; length 0
// when the byte there does not start one (a stray continuation byte, an overlong form, a
// surrogate, a value past U+10FFFF, or a sequence cut short).
struct Decoded {
  std::uint32_t code = 0;
  std::size_t length = 0;
};

Decoded decode_utf8_at(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (length == 0 || length > text.size() - at) return {};
  std::uint32_t code = length == 1 ? lead : lead & (0x7Fu >> length);
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[at + k]);
    if ((next & 0xC0) != 0x80) return {};
    code = (code << 6) | (next & 0x3Fu);
  }
  static constexpr std::uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return {};
  return {code, length};
}

// Code points that a terminal acts on or that change how the rest of the line reads.
bool needs_escape(std::uint32_t code) {
  return code < 0x20 || code == 0x7F || (code >= 0x80 && code <= 0x9F) || code == 0x2028 || code == 0x2029 ||
         (code >= 0x202A && code <= 0x202E) || (code >= 0x2066 && code <= 0x2069);
}

// Appends the visible form of the character (or stray byte) at text[at]; returns its byte length.
std::size_t append_printable(std::string& out, std::string_view text, std::size_t at) {
  const Decoded character = decode_utf8_at(text, at);
  if (character.length == 0) {
    out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at]));
    return 1;
  }
  if (!needs_escape(character.code)) {
    out.append(text.substr(at, character.length));
  } else if (character.code == '\n') {
    out += "\\n";
  } else if (character.code == '\r') {
    out += "\\r";
  } else if (character.code == '\t') {
    out += "\\t";
  } else if (character.code < 0x80) {
    out += fmt::format("\\x{:02x}", character.code);
  } else {
    out += fmt::format("\\u{:04x}", character.code);
  }
  return character.length;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) at += append_printable(out, text, at);
  return out;
}

bool is_utf8(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    // ASCII, most of any text, eight bytes at a time: no decoding (a snapshot's load checks every
    // string it holds).
    std::uint64_t eight = 0;
    if (text.size() - at >= sizeof eight) {
      std::memcpy(&eight, text.data() + at, sizeof eight);
      if ((eight & 0x8080808080808080ULL) == 0) {
        at += sizeof eight;
        continue;
      }
    }
    if (static_cast<unsigned char>(text[at]) < 0x80) {
      ++at;
      continue;
    }
    const std::size_t length = decode_utf8_at(text, at).length;
    if (length == 0) return false;
    at += length;
  }
  return true;
}

std::string abbreviated(std::string_view text, std::size_t limit) {
  std::string out;
  std::string next;
  for (std::size_t at = 0; at < text.size();) {
    next.clear();
    at += append_printable(next, text, at);
    if (out.size() + next.size() > limit) return fmt::format("{}... ({} bytes)", out, text.size());
    out += next;
  }
  return out;
}

}  // namespace dlx::config
