// SPDX-License-Identifier: Apache-2.0
#pragma once
// Text from files, journals and users, made safe to show on a terminal. A control character in a
// value printed raw can move the cursor, retitle the window (OSC: ESC ] 0;title BEL), or start a
// new line that forges a table row or a message line; a stray byte garbles the rest of the line.
// Every table cell and every user-derived string dlx prints goes through printable() (messages
// through abbreviated(), which also keeps them short). JSON output needs neither: its encoder
// escapes control characters itself.
#include <cstddef>
#include <string>
#include <string_view>

namespace dlx::config {

// `text` with every character that a terminal would act on, or that hides what follows, replaced
// by a visible escape, and everything else kept byte for byte:
//   \n \r \t                       for those three
//   \xHH                           other C0 controls and DEL (U+0000..U+001F, U+007F), and each
//                                  byte that is not part of well-formed UTF-8
//   \u00HH / \uHHHH                C1 controls (U+0080..U+009F, e.g. \u009b, the one-character CSI),
//                                  the line and paragraph separators U+2028/U+2029, and the bidi
//                                  overrides and isolates (U+202A..U+202E, U+2066..U+2069), which
//                                  reorder what a terminal shows
// Printable UTF-8 (accents, CJK, emoji) and backslashes stay as they are. One pass; applying it to
// its own output changes nothing.
std::string printable(std::string_view text);

// Whether `text` is well-formed UTF-8 (no stray continuation byte, overlong form, surrogate or
// value past U+10FFFF): what a JSON encoder requires of a string.
bool is_utf8(std::string_view text);

// printable(text), cut when longer than `limit` bytes (at a character boundary, never inside an
// escape) and then followed by "... (N bytes)", N the length of `text`: a value quoted in a
// message, which must stay one readable line whatever the value's size.
std::string abbreviated(std::string_view text, std::size_t limit = 64);

}  // namespace dlx::config
