// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/snapshot_gap.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include <exception>
#include <system_error>

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

// The text of the Python string literal that starts `text` ('...' or "...", as repr() quotes),
// or nullopt: no quote there, no closing one, or an escape (a name with a backslash or both
// quotes is rare enough to leave to the usual crash rules).
std::optional<std::string> quoted_at_start(std::string_view text) {
  if (text.empty() || (text.front() != '\'' && text.front() != '"')) return std::nullopt;
  const char quote = text.front();
  const auto end = text.find(quote, 1);
  if (end == std::string_view::npos || end == 1) return std::nullopt;
  const auto inside = text.substr(1, end - 1);
  if (inside.find('\\') != std::string_view::npos) return std::nullopt;
  return std::string(inside);
}

std::optional<std::string> quoted_after(std::string_view line, std::string_view marker) {
  const auto at = line.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  return quoted_at_start(line.substr(at + marker.size()));
}

bool starts_with_any(std::string_view line, std::initializer_list<std::string_view> prefixes) {
  for (const auto prefix : prefixes) {
    if (line.starts_with(prefix)) return true;
  }
  return false;
}

bool exists_here(const fs::path& path) {
  std::error_code error;
  return fs::exists(fs::symlink_status(path, error));
}

bool is_directory_here(const fs::path& path) {
  std::error_code error;
  return fs::is_directory(fs::symlink_status(path, error));
}

// The first part of `relative` (a path inside the tree) that the snapshot lacks while the source
// has it: "data" for data/raw/x.csv when the whole data/ was left out. nullopt when the snapshot
// has the whole path (the crash is about something else) or the source lacks the part too.
std::optional<fs::path> first_part_left_out(const fs::path& relative, const SnapshotOrigin& origin) {
  fs::path prefix;
  for (const auto& part : relative) {
    prefix /= part;
    if (exists_here(origin.snapshot / prefix)) continue;
    if (exists_here(origin.source / prefix)) return prefix;
    return std::nullopt;
  }
  return std::nullopt;
}

bool leads_out(const fs::path& relative) { return !relative.empty() && *relative.begin() == ".."; }

// `path` (absolute) inside `top`, as a path relative to it; nullopt when it is not inside.
std::optional<fs::path> inside(const fs::path& path, const fs::path& top) {
  if (top.empty()) return std::nullopt;
  const auto relative = path.lexically_normal().lexically_relative(top.lexically_normal());
  if (relative.empty() || leads_out(relative)) return std::nullopt;
  return relative == "." ? fs::path() : relative;
}

bool made_after_snapshot(const fs::path& path, std::int64_t created_unix) {
  struct stat status {};
  return created_unix > 0 && ::lstat(path.c_str(), &status) == 0 && status.st_mtime > created_unix;
}

// Why the snapshot lacks `part` (relative to the tree; `shown` as the message names it), and what
// to do about it.
std::string why_left_out(const fs::path& part, const std::string& shown, const SnapshotOrigin& origin,
                         MissingName::Kind kind) {
  for (const auto& [path, reason] : origin.skipped) {
    if (part == fs::path(path) || inside(origin.source / part, origin.source / path)) {
      const bool link = reason.starts_with("symbolic link");
      return fmt::format("{}: {}; {}", path, reason,
                         link ? "put the file itself in the tree, or use its absolute path, and submit again"
                              : "vendor its files into the tree (or install the package where the trials' "
                                "Python finds it), and submit again");
    }
  }
  if (made_after_snapshot(origin.source / part, origin.created_unix)) {
    return fmt::format("it was made or changed after the submission{}; submit again",
                       origin.git ? " (or .gitignore or .dlxignore excludes it)" : " (or .dlxignore excludes it)");
  }
  if (!origin.git) return ".dlxignore excludes it; remove its rule, and submit again";
  const auto unignore = fmt::format("un-ignore it (`git add -f {}`, or a `!{}` line in .gitignore)", shown, shown);
  return fmt::format(".gitignore or .dlxignore excludes it (`git check-ignore -v {}` there names the rule); {}{}, "
                     "and submit again", shown, unignore,
                     kind == MissingName::Kind::module
                         ? ""
                         : ", or read it from an absolute path or stage it with `data: stage:` (DLX_DATA_DIR)");
}

std::string inside_gap(const fs::path& part, const SnapshotOrigin& origin, const MissingName& missing) {
  const auto shown = part.generic_string() + (is_directory_here(origin.source / part) ? "/" : "");
  const auto what = missing.kind == MissingName::Kind::module ? fmt::format("the module '{}'", missing.name)
                                                              : fmt::format("'{}'", missing.name);
  const auto holder = missing.kind == MissingName::Kind::file && part == fs::path(missing.name)
                          ? std::string() : shown + " ";
  return fmt::format("{} is not in the experiment's code snapshot, but {}is in {}: {}", what, holder,
                     origin.source.string(), why_left_out(part, shown, origin, missing.kind));
}

std::optional<std::string> file_gap(const MissingName& missing, const SnapshotOrigin& origin, const fs::path& code_dir) {
  const fs::path given(missing.name);
  fs::path relative;
  if (given.is_absolute()) {
    auto in_tree = inside(given, code_dir);
    if (!in_tree) in_tree = inside(given, origin.snapshot);
    if (!in_tree) return std::nullopt;
    relative = *in_tree;
  } else {
    relative = (origin.workdir / given).lexically_normal();
  }
  if (leads_out(relative)) {
    const auto target = (origin.source / relative).lexically_normal();
    if (!exists_here(target)) return std::nullopt;
    return fmt::format("'{}' leads out of the copy of the code snapshot that the trainer runs in, so it does not "
                       "reach {}, which it names from {}: give the absolute path, or stage the data with `data: "
                       "stage:` (DLX_DATA_DIR), and submit again",
                       missing.name, target.string(),
                       origin.workdir.empty() ? origin.source.string() : (origin.source / origin.workdir).string());
  }
  const auto part = first_part_left_out(relative, origin);
  if (!part) return std::nullopt;
  return inside_gap(*part, origin, missing);
}

// Where Python looks for a top-level module first: the directory of the script it runs
// (sys.path[0]), else the working directory (`python -m`, `-c`): every *.py argument's directory
// inside the tree, then the working directory.
std::vector<fs::path> module_dirs(const SnapshotOrigin& origin, const std::vector<std::string>& command) {
  std::vector<fs::path> dirs;
  for (const auto& argument : command) {
    // A shell entrypoint is one string: its words.
    std::size_t start = 0;
    while (start < argument.size()) {
      const auto end = std::min(argument.find_first_of(" \t", start), argument.size());
      const fs::path word(argument.substr(start, end - start));
      start = end + 1;
      if (word.extension() != ".py" || word.is_absolute()) continue;
      const auto dir = (origin.workdir / word).lexically_normal().parent_path();
      if (!leads_out(dir)) dirs.push_back(dir);
    }
  }
  dirs.push_back(origin.workdir);
  return dirs;
}

std::optional<std::string> module_gap(const MissingName& missing, const SnapshotOrigin& origin,
                                      const std::vector<std::string>& command) {
  fs::path module;
  std::size_t start = 0;
  while (start <= missing.name.size()) {
    const auto end = std::min(missing.name.find('.', start), missing.name.size());
    const auto part = missing.name.substr(start, end - start);
    if (part.empty() || part == "..") return std::nullopt;
    module /= part;
    start = end + 1;
  }
  for (const auto& dir : module_dirs(origin, command)) {
    for (const auto& candidate : {fs::path(module).concat(".py"), module}) {
      if (const auto part = first_part_left_out((dir / candidate).lexically_normal(), origin)) {
        return inside_gap(*part, origin, missing);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<MissingName> missing_name(std::string_view line) {
  using Kind = MissingName::Kind;
  if (line.starts_with("ModuleNotFoundError: ")) {
    if (auto name = quoted_after(line, "No module named ")) return MissingName{Kind::module, *name};
    return std::nullopt;
  }
  if (!starts_with_any(line, {"FileNotFoundError: ", "OSError: ", "IOError: "})) return std::nullopt;
  if (auto name = quoted_after(line, "No such file or directory: ")) return MissingName{Kind::file, *name};
  if (auto name = quoted_after(line, "name = "); name && line.find("errno = 2,") != std::string_view::npos) {
    return MissingName{Kind::file, *name};  // h5py: "Unable to open file (unable to open file: name = '...', errno = 2, ..."
  }
  // numpy's loadtxt and genfromtxt: "FileNotFoundError: data.csv not found."
  constexpr std::string_view kNotFound = " not found.";
  if (line.ends_with(kNotFound)) {
    const auto after = line.find(": ") + 2;
    const auto name = line.substr(after, line.size() - kNotFound.size() - after);
    if (!name.empty() && name.find(' ') == std::string_view::npos) return MissingName{Kind::file, std::string(name)};
  }
  return std::nullopt;
}

std::optional<std::string> snapshot_gap(std::string_view error_line, const SnapshotOrigin& origin,
                                        const fs::path& code_dir, const std::vector<std::string>& command) noexcept {
  try {
    const auto missing = missing_name(error_line);
    if (!missing || origin.source.empty()) return std::nullopt;
    return missing->kind == MissingName::Kind::module ? module_gap(*missing, origin, command)
                                                      : file_gap(*missing, origin, code_dir);
  } catch (const std::exception&) {
    return std::nullopt;  // an explanation that cannot be made leaves the crash to the usual rules
  }
}

}  // namespace dlx::launch
