// SPDX-License-Identifier: Apache-2.0
// The `code` section: whether sbatch snapshots the trainer's source, from where, how much it may
// copy, where trials run it and how much of what they write there is kept (docs/config-reference.md). The snapshot itself is taken by
// store/code_snapshot (it needs git and the file system); this file only reads and writes keys.
#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/config/display_text.hpp"
#include "parse_sections.hpp"

namespace dlx::config {

const char* to_string(CodeConfig::RunFrom where) {
  return where == CodeConfig::RunFrom::shared ? "shared" : "node_local";
}

namespace detail {

namespace {

constexpr const char* kSizeFix = "write a size such as 100MB, 250MiB or 1GB (or a number of bytes)";

std::uint64_t parse_max_size(const MappingReader& section) {
  const YAML::Node value = section.raw("max_size");
  if (!value.IsScalar()) {
    section.fail(value, section.path("max_size"), "expected a size, got a list or mapping", kSizeFix);
  }
  const auto bytes = parse_byte_size(value.Scalar());
  if (!bytes) {
    section.fail(value, section.path("max_size"), fmt::format("'{}' is not a size", abbreviated(value.Scalar())),
                 kSizeFix);
  }
  if (*bytes == 0) {
    section.fail(value, section.path("max_size"), "must be above 0",
                 "to take no snapshot write code: {snapshot: false}");
  }
  return *bytes;
}

// A size (0: keep nothing), or false (nothing) / true (`fallback`: the site's, else the default).
std::uint64_t parse_keep_outputs(const MappingReader& section, std::uint64_t fallback) {
  const YAML::Node value = section.raw("keep_outputs");
  constexpr const char* kFix = "write a size such as 1GB or 200MiB, or false to keep none of the files";
  if (!value.IsScalar()) {
    section.fail(value, section.path("keep_outputs"), "expected a size or false, got a list or mapping", kFix);
  }
  if (value.Scalar() == "false") return 0;
  if (value.Scalar() == "true") return fallback;
  const auto bytes = parse_byte_size(value.Scalar());
  if (!bytes) {
    section.fail(value, section.path("keep_outputs"), fmt::format("'{}' is not a size", abbreviated(value.Scalar())),
                 kFix);
  }
  return *bytes;
}

}  // namespace

void parse_code(const MappingReader& section, CodeConfig& into, CodeKeys keys) {
  if (keys == CodeKeys::site) {
    section.allow_only({"max_size", "run_from", "keep_outputs"});
  } else {
    section.allow_only({"snapshot", "dir", "max_size", "run_from", "keep_outputs"});
    if (auto snapshot = section.optional_boolean("snapshot")) into.snapshot = *snapshot;
    if (auto dir = section.optional_string("dir")) {
      if (dir->empty()) {
        section.fail(section.raw("dir"), section.path("dir"), "is empty",
                     "name the directory to snapshot (relative to the experiment file), or leave dir out");
      }
      into.dir = *dir;
    }
  }
  if (section.has("max_size")) into.max_size = parse_max_size(section);
  if (auto where = section.optional_choice("run_from", {"node_local", "shared"})) {
    into.run_from = *where == "shared" ? CodeConfig::RunFrom::shared : CodeConfig::RunFrom::node_local;
  }
  if (section.has("keep_outputs")) {
    into.keep_outputs = parse_keep_outputs(section, into.keep_outputs ? into.keep_outputs : CodeConfig{}.keep_outputs);
  }
}

void emit_code(YAML::Emitter& out, const CodeConfig& code) {
  out << YAML::Key << "code" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "snapshot" << YAML::Value << code.snapshot;
  if (code.dir) out << YAML::Key << "dir" << YAML::Value << YAML::DoubleQuoted << *code.dir;
  out << YAML::Key << "max_size" << YAML::Value << code.max_size;
  out << YAML::Key << "run_from" << YAML::Value << to_string(code.run_from);
  out << YAML::Key << "keep_outputs" << YAML::Value << code.keep_outputs;
  out << YAML::EndMap;
}

}  // namespace detail

}  // namespace dlx::config
