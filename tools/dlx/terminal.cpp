// SPDX-License-Identifier: Apache-2.0
#include "terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace dlx::cli {

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

namespace {

// A positive whole number from the environment variable `name` (COLUMNS, LINES), or nullopt.
std::optional<std::size_t> size_from_environment(const char* name) {
  const char* text = std::getenv(name);
  if (!text) return std::nullopt;
  std::size_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [rest, error] = std::from_chars(text, end, value);
  if (error == std::errc() && rest == end && value > 0) return value;
  return std::nullopt;
}

}  // namespace

std::optional<std::size_t> terminal_columns() {
  struct winsize size {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return size_from_environment("COLUMNS");
}

std::optional<std::size_t> terminal_rows() {
  struct winsize size {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_row > 0) return size.ws_row;
  return size_from_environment("LINES");
}

}  // namespace dlx::cli
