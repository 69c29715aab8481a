// SPDX-License-Identifier: Apache-2.0
#include "entrypoint_check.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <regex>
#include <string_view>

#include <fmt/format.h>

#include "dlx/config/closest_match.hpp"

namespace dlx::spank {

namespace fs = std::filesystem;

namespace {

// A directory listed for a did-you-mean holds the user's code: past this many entries it is not.
constexpr std::size_t kMaxListedEntries = 10000;

bool is_interpreter(const std::string& name) {
  static const std::regex interpreter("python|python3|python3\\.[0-9]+|sh|bash");
  return std::regex_match(name, interpreter);
}

// The words of a shell string that holds nothing but words (nullopt: quotes, variables,
// redirections, globs, ... that only a shell can read).
std::optional<std::vector<std::string>> plain_words(std::string_view text) {
  if (text.find_first_of("'\"`$&|;<>()\\*?[]{}~#=\n") != std::string_view::npos) return std::nullopt;
  std::vector<std::string> words;
  std::size_t start = 0;
  while ((start = text.find_first_not_of(" \t", start)) != std::string_view::npos) {
    const auto end = text.find_first_of(" \t", start);
    words.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    start = end;
  }
  return words;
}

// The closest of `names` to the script's file name (same extension), as the script would be
// written: "" when none is plausibly what was meant.
std::string guess_for(const fs::path& script, std::vector<std::string> names) {
  const auto extension = script.extension().string();
  std::erase_if(names, [&](const std::string& name) { return fs::path(name).extension().string() != extension; });
  std::ranges::sort(names);  // the same guess on every submission
  const auto match = config::closest_match(script.filename().string(), names);
  return match.empty() ? "" : (script.parent_path() / match).string();
}

std::string with_guess(const std::string& guess, std::string_view otherwise) {
  return guess.empty() ? std::string(otherwise) : fmt::format("did you mean {}?", guess);
}

struct Script {
  std::string path;  // as written, relative
  bool program = false;  // run as the program itself, not after an interpreter
};

std::optional<Script> script_of(const config::Experiment& experiment) {
  if (experiment.entrypoint.empty()) return std::nullopt;
  std::vector<std::string> words = experiment.entrypoint;
  if (experiment.entrypoint_is_shell) {
    auto plain = plain_words(experiment.entrypoint.front());
    if (!plain || plain->empty()) return std::nullopt;
    words = std::move(*plain);
  }
  Script script;
  if (is_interpreter(fs::path(words.front()).filename().string())) {
    if (words.size() < 2 || words[1].empty() || words[1].front() == '-') return std::nullopt;
    script.path = words[1];
  } else if (words.front().find('/') != std::string::npos) {
    script = {words.front(), true};
  } else {
    return std::nullopt;  // a program from PATH
  }
  if (fs::path(script.path).is_absolute()) return std::nullopt;
  return script;
}

// `how`: how to make it executable where the trials will find it. The interpreter suggested is
// the one its extension names (.py, .sh), else a placeholder.
std::string not_executable(const std::string& script, mode_t mode, std::string_view where, std::string_view how) {
  const auto extension = fs::path(script).extension().string();
  const std::string_view interpreter = extension == ".py" ? "python3" : extension == ".sh" ? "bash" : "INTERPRETER";
  return fmt::format("the entrypoint runs {} as a program, but {} is not executable (mode {:04o}), so every trial "
                     "would fail with \"Permission denied\": name its interpreter first (entrypoint: [{}, {}]), or "
                     "make it executable ({})",
                     script, where, mode & 07777, interpreter, fs::path(script).lexically_normal().generic_string(),
                     how);
}

}  // namespace

std::optional<std::string> entrypoint_script(const config::Experiment& experiment) {
  auto script = script_of(experiment);
  if (!script) return std::nullopt;
  return std::move(script->path);
}

std::optional<std::string> script_not_executable_in_snapshot(const config::Experiment& experiment,
                                                             const std::string& workdir, const SnapshotModeOf& mode_of) {
  const auto script = script_of(experiment);
  if (!script || !script->program) return std::nullopt;
  const auto path = (fs::path(workdir) / script->path).lexically_normal().generic_string();
  const auto mode = mode_of(path);
  if (!mode || (*mode & S_IXUSR) != 0) return std::nullopt;
  return not_executable(script->path, *mode, fmt::format("the code snapshot's {}", path),
                        "chmod +x, and git add it: git keeps the bit");
}

std::optional<std::string> script_not_executable_in(const config::Experiment& experiment, const fs::path& start_dir) {
  const auto script = script_of(experiment);
  if (!script || !script->program) return std::nullopt;
  struct stat status {};
  const auto path = (start_dir / script->path).lexically_normal();
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode) || (status.st_mode & S_IXUSR) != 0) {
    return std::nullopt;
  }
  return not_executable(script->path, status.st_mode, path.string(),
                        "chmod +x: with no code snapshot the trials run the file as it is when they start");
}

std::optional<std::string> script_missing_from_snapshot(const config::Experiment& experiment,
                                                        const std::vector<std::string>& files, const fs::path& root,
                                                        const std::string& workdir) {
  const auto script = entrypoint_script(experiment);
  if (!script) return std::nullopt;
  const auto path = (fs::path(workdir) / *script).lexically_normal().generic_string();
  if (path.empty() || path == "." || path == ".." || path.starts_with("../")) return std::nullopt;  // outside it
  const auto there = std::ranges::any_of(files, [&](const std::string& file) {
    return file == path || (file.size() > path.size() && file.starts_with(path) && file[path.size()] == '/');
  });
  if (there) return std::nullopt;
  const auto directory = fs::path(path).parent_path().generic_string();
  std::vector<std::string> siblings;
  for (const auto& file : files) {
    const fs::path listed(file);
    if (listed.parent_path().generic_string() == directory) siblings.push_back(listed.filename().string());
  }
  const auto where = workdir.empty() ? fmt::format("the code snapshot of {}", root.string())
                                     : fmt::format("the code snapshot of {} (trials start in its {}/)", root.string(),
                                                   workdir);
  std::error_code no_file;
  if (fs::exists(root / path, no_file)) {
    return fmt::format("the entrypoint runs {}, which {} leaves out: {} exists but git ignores it or .dlxignore "
                       "excludes it (dlx copies what git ls-files lists and .dlxignore keeps: git add it, or change "
                       "the ignore file)",
                       *script, where, (root / path).string());
  }
  return fmt::format("the entrypoint runs {}, which is not in {}: {}", *script, where,
                    with_guess(guess_for(*script, std::move(siblings)),
                               "fix the entrypoint, or add the file to the code"));
}

std::optional<std::string> script_missing_from(const config::Experiment& experiment, const fs::path& start_dir) {
  const auto script = entrypoint_script(experiment);
  if (!script) return std::nullopt;
  std::error_code error;
  if (fs::exists(start_dir / *script, error) || error) return std::nullopt;  // there, or cannot tell
  std::vector<std::string> siblings;
  for (auto entry = fs::directory_iterator((start_dir / *script).parent_path(), error);
       !error && entry != fs::directory_iterator() && siblings.size() < kMaxListedEntries; entry.increment(error)) {
    siblings.push_back(entry->path().filename().string());
  }
  return fmt::format("the entrypoint runs {}, which is not in {} now, where the trials start and run the files as "
                     "they are then (no code snapshot): {}",
                     *script, start_dir.string(),
                     with_guess(guess_for(*script, std::move(siblings)),
                                "unless the job makes it first, every trial will fail to find it"));
}

}  // namespace dlx::spank
