// SPDX-License-Identifier: Apache-2.0
#include "text_checks.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include "dlx/common/durable_file.hpp"
#include "dlx/common/error.hpp"
#include "dlx/config/names.hpp"
#include "dlx/config/parse.hpp"
#include "yaml_reader.hpp"

namespace dlx::config::detail {

namespace {

constexpr int kMaxDepth = 32;

SourcePosition position_at(std::string_view text, std::size_t offset, const std::string& file) {
  auto line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
  int column = static_cast<int>(offset - (line_start == std::string_view::npos ? 0 : line_start + 1)) + 1;
  return {file, line, column};
}

// Offset of the first byte that is not part of well-formed UTF-8, or npos.
std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) return i;
    std::uint32_t code = length == 1 ? byte : byte & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return i;
      code = (code << 6) | (next & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return i;
    i += length;
  }
  return std::string_view::npos;
}

void check_bytes(std::string_view text, const std::string& file) {
  if (text.size() > kMaxFileBytes) {
    throw ConfigError({file, 0, 0}, "", fmt::format("the file is {} bytes, over the 1 MiB limit", text.size()),
                      "an experiment file is a few kilobytes; is this the right file?");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw ConfigError({file, 0, 0}, "", "the file is empty", "write at least name, entrypoint and searcher");
  }
  if (auto nul = text.find('\0'); nul != std::string_view::npos) {
    throw ConfigError(position_at(text, nul, file), "", "the file contains a NUL byte", "save it as plain UTF-8 text");
  }
  if (auto bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    throw ConfigError(position_at(text, bad, file), "",
                      fmt::format("the file is not valid UTF-8 (byte 0x{:02x})", static_cast<unsigned char>(text[bad])),
                      "save it as UTF-8 text");
  }
}

// How many lines start with a YAML document marker: `---` (a document starts) or `...` (one ends,
// and another may follow without `---`). A stream with none holds one document.
std::size_t count_document_markers(std::string_view text) {
  std::size_t markers = 0;
  for (std::size_t line = 0; line < text.size();) {
    const auto rest = text.substr(line);
    if (rest.starts_with("---") || rest.starts_with("...")) ++markers;
    const auto end = text.find('\n', line);
    if (end == std::string_view::npos) break;
    line = end + 1;
  }
  return markers;
}

// Where the first node of a document is; nothing for an empty one (a null).
class FirstNodeOfDocument final : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& at, YAML::anchor_t) override { note(at); }
  void OnScalar(const YAML::Mark& at, const std::string&, YAML::anchor_t, const std::string&) override { note(at); }
  void OnSequenceStart(const YAML::Mark& at, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(at);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& at, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(at);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& at) {
    if (!mark) mark = at;
  }
};

// YAML::Load keeps the first document and drops the rest without a word: a second one after `---`
// (two experiments pasted together, a stray separator) is an error. Empty documents (a trailing
// `---`) say nothing and are let through. Not YAML::LoadAll: on some malformed streams (a stray `}`
// at the top level, found by the fuzzer) yaml-cpp 0.7 returns empty documents forever. Here the
// parser is asked for no more documents than the markers allow (one per marker line, plus one).
void check_single_document(std::string_view text, const std::string& file_label) {
  const auto most = count_document_markers(text) + 1;
  if (most == 1) return;
  std::istringstream stream{std::string(text)};
  YAML::Parser parser(stream);
  for (std::size_t i = 0; i < most; ++i) {
    FirstNodeOfDocument first;
    if (!parser.HandleNextDocument(first)) return;
    if (i == 0 || !first.mark) continue;
    throw ConfigError({file_label, first.mark->line + 1, first.mark->column + 1}, "",
                      "a second YAML document starts here (after ---): dlx reads one document per file and "
                      "would ignore it",
                      "remove the --- line to merge the two, or put each experiment in a file of its own");
  }
}

}  // namespace

std::string read_config_file(const std::filesystem::path& path, const char* what) {
  try {
    return read_small_file(path, kMaxFileBytes);
  } catch (const SystemError& e) {
    throw ConfigError({path.string(), 0, 0}, "", fmt::format("cannot read the {}: {}", what, e.what()),
                      "check the path and its permissions");
  } catch (const Error&) {
    throw ConfigError({path.string(), 0, 0}, "", "the file is over the 1 MiB limit",
                      "an experiment file is a few kilobytes; is this the right file?");
  }
}

YAML::Node load_document(std::string_view text, const std::string& file_label) {
  check_bytes(text, file_label);
  YAML::Node document;
  try {
    document = YAML::Load(std::string(text));
    check_single_document(text, file_label);
  } catch (const YAML::ParserException& e) {
    throw ConfigError({file_label, e.mark.line + 1, e.mark.column + 1}, "",
                      fmt::format("YAML syntax error: {}", e.msg), "fix the YAML syntax at this position");
  }
  if (!document.IsMap()) {
    throw ConfigError(position_of(document, file_label), "", "the file must be a mapping of keys to values",
                      "start with name: <experiment name>");
  }
  check_structure(document, file_label, kMaxDepth);
  return document;
}

}  // namespace dlx::config::detail
