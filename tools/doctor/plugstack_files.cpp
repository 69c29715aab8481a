// SPDX-License-Identifier: Apache-2.0
#include "plugstack_files.hpp"

#include <glob.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "slurm_facts.hpp"

namespace dlx::doctor {

namespace {

// Deeper than any real configuration; stops a file that includes itself.
constexpr int kMaxIncludeDepth = 8;

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The patterns of `text`'s `include PATTERN` lines, relative ones made absolute against `dir`.
std::vector<std::string> include_patterns(const std::string& text, const std::filesystem::path& dir) {
  std::vector<std::string> patterns;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string keyword;
    std::string pattern;
    if (!(words >> keyword >> pattern) || keyword != "include") continue;
    patterns.push_back(pattern.front() == '/' ? pattern : (dir / pattern).string());
  }
  return patterns;
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  glob_t matches{};
  std::vector<std::string> paths;
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  return paths;
}

std::optional<PlugstackFile> search(const std::string& path, const std::string& text, int depth) {
  if (find_plugin_line(text)) return PlugstackFile{path, text};
  if (depth >= kMaxIncludeDepth) return std::nullopt;
  for (const auto& pattern : include_patterns(text, std::filesystem::path(path).parent_path())) {
    for (const auto& included : glob_paths(pattern)) {
      const auto included_text = read_text(included);
      if (!included_text) continue;
      if (auto found = search(included, *included_text, depth + 1)) return found;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PlugstackFile> plugstack_file_with_dlx(const std::string& path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  if (auto found = search(path, *text, 0)) return found;
  return PlugstackFile{path, *text};
}

}  // namespace dlx::doctor
