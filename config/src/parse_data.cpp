// SPDX-License-Identifier: Apache-2.0
// The `data` section: which datasets dlx-launch stages into each node's cache before the trainer
// starts, where the cache lives, and the cache's limits (docs/config-reference.md). The staging
// itself is the data library's (data/); sbatch checks the paths (spank-plugin/data_check_step).
// This file only reads and writes keys.
#include <filesystem>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/config/display_text.hpp"
#include "dlx/config/node_dir.hpp"
#include "parse_sections.hpp"

namespace dlx::config::detail {

namespace {

constexpr const char* kDataStageFix = "e.g. data: {stage: [/shared/datasets/mnist]} (files, directories or archives)";
constexpr const char* kCacheSizeFix = "write a size such as 100GB or 500GiB (or a number of bytes; 0 is no cap)";

// `a` and `b` name the same path as written ("/d/./x/" is "/d/x").
bool same_path(const std::string& a, const std::string& b) {
  const auto normal = [](const std::string& text) {
    auto path = std::filesystem::path(text).lexically_normal();
    return path.has_filename() || path == path.root_path() ? path : path.parent_path();
  };
  return normal(a) == normal(b);
}

std::vector<std::string> parse_stage(const MappingReader& section) {
  const YAML::Node list = section.raw("stage");
  const std::string key = section.path("stage");
  std::vector<YAML::Node> items;
  if (list.IsScalar()) {
    items.push_back(list);  // one path needs no list
  } else if (list.IsSequence()) {
    for (const auto& item : list) items.push_back(item);
  } else {
    section.fail(list, key, "must be a path or a list of paths", kDataStageFix);
  }
  if (items.empty()) section.fail(list, key, "is an empty list", "name at least one path, or leave data: out");
  std::vector<std::string> paths;
  for (const auto& item : items) {
    if (!item.IsScalar()) section.fail(item, key, "each entry must be a path, got a list or mapping", kDataStageFix);
    const std::string& path = item.Scalar();
    if (path.empty()) section.fail(item, key, "has an empty path", kDataStageFix);
    if (path.front() == '~') {
      section.fail(item, key, fmt::format("'{}': '~' is not expanded", abbreviated(path)),
                   "write the absolute path, or one relative to the experiment file");
    }
    if (printable(path) != path) {
      section.fail(item, key, fmt::format("'{}' holds a control character", abbreviated(path)),
                   "rename the file or directory");
    }
    for (const auto& earlier : paths) {
      if (same_path(earlier, path)) {
        section.fail(item, key, fmt::format("'{}' is listed twice", abbreviated(path)), "list each dataset once");
      }
    }
    paths.push_back(path);
  }
  return paths;
}

double parse_watermark(const MappingReader& section, const char* key) {
  const double value = *section.optional_number(key);
  if (!(value > 0 && value <= 1)) {
    section.fail(section.raw(key), section.path(key), fmt::format("is {}, not a fraction in (0, 1]", value),
                 "write the file system's use as a fraction, e.g. 0.9 for 90%");
  }
  return value;
}

}  // namespace

bool is_dlx_data(const YAML::Node& data) {
  if (!data.IsMap()) return false;
  for (const char* key : {"stage", "to", "checksum", "max_bytes", "high_watermark", "low_watermark"}) {
    if (data[key]) return true;
  }
  return false;
}

void parse_data(const MappingReader& section, DataConfig& into, DataKeys keys) {
  if (keys == DataKeys::site_defaults) {
    section.allow_only({"to", "checksum"});
  } else if (keys == DataKeys::site_limits) {
    section.allow_only({"max_bytes", "high_watermark", "low_watermark"});
  } else {
    section.allow_only({"stage", "to", "checksum", "max_bytes", "high_watermark", "low_watermark"});
    if (!section.has("stage")) {
      section.missing("stage", "name the datasets to copy to each node, e.g. data: {stage: [/shared/datasets/mnist]}");
    }
    into.stage = parse_stage(section);
  }
  if (keys != DataKeys::site_limits) {
    if (auto to = section.optional_string("to")) {
      if (auto problem = node_dir_problem(*to); !problem.empty()) {
        section.fail(section.raw("to"), section.path("to"), fmt::format("'{}' {}", abbreviated(*to), problem),
                     "name a node-local directory such as /local/%u or /tmp (%n: node name, %u: user name)");
      }
      into.to = *to;
    }
    if (auto checksum = section.optional_boolean("checksum")) into.checksum = *checksum;
  }
  if (keys == DataKeys::site_defaults) return;
  if (section.has("max_bytes")) {
    const YAML::Node value = section.raw("max_bytes");
    const auto bytes = value.IsScalar() ? parse_byte_size(value.Scalar()) : std::nullopt;
    if (!bytes) {
      section.fail(value, section.path("max_bytes"),
                   value.IsScalar() ? fmt::format("'{}' is not a size", abbreviated(value.Scalar()))
                                    : std::string("expected a size, got a list or mapping"),
                   kCacheSizeFix);
    }
    into.max_bytes = *bytes;
  }
  if (section.has("high_watermark")) into.high_watermark = parse_watermark(section, "high_watermark");
  if (section.has("low_watermark")) into.low_watermark = parse_watermark(section, "low_watermark");
  if ((section.has("high_watermark") || section.has("low_watermark")) && into.low_watermark >= into.high_watermark) {
    const char* key = section.has("low_watermark") ? "low_watermark" : "high_watermark";
    section.fail(section.raw(key), section.path(key),
                 fmt::format("low_watermark {} is not below high_watermark {}", into.low_watermark, into.high_watermark),
                 "eviction starts above high_watermark and goes down to low_watermark: set low below high");
  }
}

void check_data_limits(const MappingReader& section, const DataConfig& experiment, const DataConfig& site,
                       const std::string& site_file) {
  if (site.max_bytes != 0 && (experiment.max_bytes == 0 || experiment.max_bytes > site.max_bytes)) {
    section.fail(section.raw("max_bytes"), section.path("max_bytes"),
                 fmt::format("is {}, above this site's cap of {} (set in {})",
                             experiment.max_bytes == 0 ? std::string("0 (no cap)") : format_byte_size(experiment.max_bytes),
                             format_byte_size(site.max_bytes), site_file),
                 fmt::format("use at most {}, or leave max_bytes out", format_byte_size(site.max_bytes)));
  }
  if (experiment.high_watermark > site.high_watermark) {
    section.fail(section.raw("high_watermark"), section.path("high_watermark"),
                 fmt::format("is {}, above this site's {} (set in {})", experiment.high_watermark, site.high_watermark,
                             site_file),
                 "use a lower fraction, or leave high_watermark out");
  }
}

void emit_data(YAML::Emitter& out, const DataConfig& data) {
  if (data.stage.empty()) return;  // the site's defaults alone stage nothing
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "stage" << YAML::Value << YAML::BeginSeq;
  for (const auto& path : data.stage) out << YAML::DoubleQuoted << path;
  out << YAML::EndSeq;
  if (data.to) out << YAML::Key << "to" << YAML::Value << YAML::DoubleQuoted << *data.to;
  out << YAML::Key << "checksum" << YAML::Value << data.checksum;
  out << YAML::Key << "max_bytes" << YAML::Value << data.max_bytes;
  out << YAML::Key << "high_watermark" << YAML::Value << data.high_watermark;
  out << YAML::Key << "low_watermark" << YAML::Value << data.low_watermark;
  out << YAML::EndMap;
}

}  // namespace dlx::config::detail
