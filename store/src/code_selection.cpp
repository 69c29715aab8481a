// SPDX-License-Identifier: Apache-2.0
// The pure parts of the code snapshot: splitting git's NUL-separated lists, judging a symbolic
// link's target, and the messages (over the cap, a work tree git refuses to read).
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/byte_size.hpp"
#include "dlx/store/code_snapshot.hpp"

namespace dlx::store {

std::vector<std::string> split_nul(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const auto end = text.find('\0');
    if (end != 0) items.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return items;
}

bool link_stays_inside(std::string_view link_path, std::string_view target) {
  if (target.empty() || target.front() == '/') return false;
  // Depth below the root of the link's directory, then walk the target's components.
  long depth = 0;
  std::filesystem::path directory = std::filesystem::path(link_path).parent_path();
  for (const auto& part : directory) {
    if (part == "..") return false;
    if (!part.empty() && part != ".") ++depth;
  }
  for (const auto& part : std::filesystem::path(target)) {
    if (part == "..") {
      if (--depth < 0) return false;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
  }
  return true;
}

std::string over_cap_message(const CodePlan& plan, std::size_t biggest) {
  std::vector<const CodeEntry*> files;
  for (const auto& entry : plan.files) {
    if (!entry.symlink) files.push_back(&entry);
  }
  const std::size_t shown = std::min(biggest, files.size());
  std::partial_sort(files.begin(), files.begin() + static_cast<long>(shown), files.end(),
                    [](const CodeEntry* a, const CodeEntry* b) {
                      return a->size != b->size ? a->size > b->size : a->path < b->path;
                    });
  std::string list;
  for (std::size_t index = 0; index < shown; ++index) {
    list += fmt::format("{}{} ({})", index ? ", " : "", files[index]->path, format_byte_size(files[index]->size));
  }
  return fmt::format(
      "the code snapshot of {} would be {} in {} files, over the limit of {}; the biggest: {} (list them "
      "in {}/{} (gitignore syntax) or .gitignore, raise the limit with code: {{max_size: 500MB}}, "
      "or take no snapshot with code: {{snapshot: false}})",
      plan.root.string(), format_byte_size(plan.bytes), plan.files.size(),
      format_byte_size(plan.max_size), list, plan.root.string(), kDlxIgnoreFileName);
}

std::string without_credentials(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);  // scp-like user@host:path: no secret
  const auto host_start = scheme + 3;
  const auto path_start = url.find('/', host_start);
  const auto at = url.substr(0, path_start).rfind('@');
  if (at == std::string_view::npos || at < host_start) return std::string(url);
  return std::string(url.substr(0, host_start)) + std::string(url.substr(at + 1));
}

std::optional<std::string> unsafe_repository_message(std::string_view git_error,
                                                    const std::filesystem::path& directory) {
  // git 2.35.2 to 2.35.x said "unsafe repository ('...' is owned by someone else)", later releases
  // "detected dubious ownership in repository at '...'" (LC_ALL=C: git's own English). Only that
  // line is quoted: the rest is git's advice to trust the directory, which dlx must not relay.
  for (std::string_view rest = git_error; !rest.empty();) {
    const auto end = rest.find('\n');
    const auto line = rest.substr(0, end);
    if (line.find("dubious ownership") != std::string_view::npos ||
        line.find("unsafe repository") != std::string_view::npos) {
      return fmt::format("{} is inside a git repository that is not yours (git: {}): dlx reads only your own "
                         "repositories, since git would run commands from another user's configuration as you "
                         "(do not trust it with safe.directory)",
                         directory.string(), line);
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return std::nullopt;
}

}  // namespace dlx::store
