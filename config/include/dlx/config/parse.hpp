// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dlx/common/error.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/config/site.hpp"

namespace dlx::config {

// A mistake in an experiment file. what() is the whole human message:
//   "exp.yaml:12:5: searcher.max_trials: must be at least 1, got 0 (set max_trials: 1 or more)"
// Safe to print: control characters in any part are escaped and a long key is shortened
// (display_text.hpp), so the accessors return the parts as shown, not as given.
class ConfigError : public Error {
 public:
  ConfigError(SourcePosition where, std::string key, std::string problem, std::string fix);
  const SourcePosition& where() const noexcept { return where_; }
  const std::string& key() const noexcept { return key_; }
  const std::string& problem() const noexcept { return problem_; }
  const std::string& fix() const noexcept { return fix_; }

 private:
  struct Parts {
    SourcePosition where;
    std::string key, problem, fix;
  };
  explicit ConfigError(Parts parts);

 protected:
  // `problems`' first part, with `message` (already made safe) as what().
  ConfigError(const ConfigError& first, const std::string& message);

 private:
  SourcePosition where_;
  std::string key_, problem_, fix_;
};

// Every problem of one file, sorted by line (file-level problems, with no line, first): what()
// is one message per line, and the accessors of ConfigError return the first problem's parts, so
// a caller that knows only ConfigError still gets a complete, correct message.
class ConfigErrors : public ConfigError {
 public:
  explicit ConfigErrors(std::vector<ConfigError> problems);
  const std::vector<ConfigError>& problems() const noexcept { return problems_; }

 private:
  std::vector<ConfigError> problems_;
};

// At most `shown` problems of `error` one per line, then "... and N more problems" (the plugin's
// sbatch message, which must stay readable).
std::string first_problems(const ConfigError& error, std::size_t shown);

// Parse and validate: throws ConfigErrors listing every problem found. `file_label` is the name used in messages (the path as the user gave it).
// With `site`, its defaults fill what the file leaves out and its limits apply.
Experiment parse_experiment(std::string_view text, const std::string& file_label,
                            const SiteConfig* site = nullptr);
Experiment parse_experiment_file(const std::filesystem::path& path, const SiteConfig* site = nullptr);

// The frozen snapshot inside an experiment directory.
inline constexpr const char* kSnapshotFileName = "experiment.yaml";
Experiment load_snapshot(const std::filesystem::path& experiment_dir);

}  // namespace dlx::config
