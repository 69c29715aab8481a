#include <fmt/format.h>

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

}  // namespace

ConfigError::ConfigError(SourcePosition where, std::string key, std::string problem,
                         std::string fix)
    : Error(format_message(where, key, problem, fix)),
      where_(std::move(where)),
      key_(std::move(key)),
      problem_(std::move(problem)),
      fix_(std::move(fix)) {}

}  // namespace dlx::config
