// SPDX-License-Identifier: Apache-2.0
#pragma once
// Bounds on JSON read from files (journal records, the journal snapshot's method state). nlohmann's
// parser and destructor are iterative, but copying, comparing and printing a value recurse once
// per level: a crafted record nested 500,000 levels deep (it fits in a record's 1 MiB) parses, then
// overflows the stack when the searcher copies it. Documents dlx writes nest a few levels.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dlx::searcher::detail {

inline constexpr int kMaxJsonDepth = 64;

// nlohmann's own DOM builder (what Json::parse uses), with a depth count: the parse stops at the
// first array or object more than `limit` levels deep. No second pass over the text, no cost per
// value beyond a counter.
template <typename Json>
class DepthLimitedDom {
 public:
  DepthLimitedDom(Json& result, int limit) : dom_(result, false), limit_(limit) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(typename Json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(typename Json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(typename Json::number_float_t value, const typename Json::string_t& text) {
    return dom_.number_float(value, text);
  }
  bool string(typename Json::string_t& value) { return dom_.string(value); }
  bool binary(typename Json::binary_t& value) { return dom_.binary(value); }
  bool key(typename Json::string_t& value) { return dom_.key(value); }
  bool start_object(std::size_t size) { return deeper() && dom_.start_object(size); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t size) { return deeper() && dom_.start_array(size); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    return dom_.parse_error(position, token, error);
  }

 private:
  bool deeper() { return ++depth_ <= limit_; }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  int limit_;
  int depth_ = 0;
};

// `text` parsed, or a discarded value when it is not JSON or nests more than `limit` levels.
template <typename Json>
Json parse_json_within(std::string_view text, int limit) {
  Json result;
  DepthLimitedDom<Json> dom(result, limit);
  if (!Json::sax_parse(text.begin(), text.end(), &dom)) return Json(Json::value_t::discarded);
  return result;
}

}  // namespace dlx::searcher::detail
