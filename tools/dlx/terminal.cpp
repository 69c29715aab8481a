#include "terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace dlx::cli {

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

std::optional<std::size_t> terminal_columns() {
  struct winsize size {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    std::size_t value = 0;
    const char* end = columns + std::strlen(columns);
    const auto [rest, error] = std::from_chars(columns, end, value);
    if (error == std::errc() && rest == end && value > 0) return value;
  }
  return std::nullopt;
}

}  // namespace dlx::cli
