#pragma once
// Bounds on JSON read from files (journal records, the journal snapshot's method state). nlohmann's
// parser and destructor are iterative, but copying, comparing and printing a value recurse once
// per level: a crafted record nested 500,000 levels deep (it fits in a record's 1 MiB) parses, then
// overflows the stack when the searcher copies it. Documents dlx writes nest a few levels.
#include <string_view>

namespace dlx::searcher::detail {

inline constexpr int kMaxJsonDepth = 64;

// Whether the JSON text `text` opens arrays or objects more than `limit` levels deep, checked on
// the text before it is parsed: one pass over its bytes, brackets inside strings (and escaped
// quotes) skipped. For valid JSON this is the depth of the parsed value; for invalid text it may
// say "too deep" where the parser would have said "not JSON", an error either way.
inline bool json_text_nested_deeper_than(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace dlx::searcher::detail
