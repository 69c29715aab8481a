// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include "dlx/config/display_text.hpp"
#include "dlx/config/parse.hpp"

namespace dlx::config {

namespace {

std::string format_message(const SourcePosition& where, const std::string& key,
                           const std::string& problem, const std::string& fix) {
  std::string message = where.file;
  if (where.line > 0) message += fmt::format(":{}:{}", where.line, where.column);
  message += ": ";
  if (!key.empty()) message += key + ": ";
  message += problem;
  if (!fix.empty()) message += " (" + fix + ")";
  return message;
}

// Every part may hold text from the file (a key, a quoted value) or the command line (the path):
// shown escaped, and a key of any length shortened. Values inside `problem` are shortened where
// they are quoted (abbreviated()); the cap here only keeps a forgotten one from flooding the screen.
constexpr std::size_t kShownKeyBytes = 160;
constexpr std::size_t kShownProblemBytes = 1024;

SourcePosition shown_position(SourcePosition where) {
  where.file = printable(where.file);
  return where;
}

}  // namespace

ConfigError::ConfigError(SourcePosition where, std::string key, std::string problem,
                         std::string fix)
    : ConfigError(Parts{shown_position(std::move(where)), abbreviated(key, kShownKeyBytes),
                        abbreviated(problem, kShownProblemBytes), printable(fix)}) {}

ConfigError::ConfigError(Parts parts)
    : Error(format_message(parts.where, parts.key, parts.problem, parts.fix)),
      where_(std::move(parts.where)),
      key_(std::move(parts.key)),
      problem_(std::move(parts.problem)),
      fix_(std::move(parts.fix)) {}

ConfigError::ConfigError(const ConfigError& first, const std::string& message)
    : Error(message), where_(first.where_), key_(first.key_), problem_(first.problem_), fix_(first.fix_) {}

namespace {

std::string joined(const std::vector<ConfigError>& problems) {
  std::string message;
  for (const auto& problem : problems) {
    if (!message.empty()) message += '\n';
    message += problem.what();
  }
  return message;
}

}  // namespace

ConfigErrors::ConfigErrors(std::vector<ConfigError> problems)
    : ConfigError(problems.at(0), joined(problems)), problems_(std::move(problems)) {}

std::string first_problems(const ConfigError& error, std::size_t shown) {
  const auto* several = dynamic_cast<const ConfigErrors*>(&error);
  if (!several || several->problems().size() <= shown) return error.what();
  const auto& problems = several->problems();
  std::string message;
  for (std::size_t k = 0; k < shown; ++k) message += std::string(problems[k].what()) + "\n";
  message += fmt::format("... and {} more problems (dlx validate {} lists them all)", problems.size() - shown,
                         printable(problems[0].where().file));
  return message;
}

}  // namespace dlx::config
