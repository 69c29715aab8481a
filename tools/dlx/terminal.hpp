// SPDX-License-Identifier: Apache-2.0
#pragma once
// What dlx's own stdout is: a terminal (then it may redraw and use its width) or a file or pipe
// (then plain lines only: no escape sequences in a log).
#include <cstddef>
#include <optional>

namespace dlx::cli {

bool stdout_is_terminal();

// The terminal's width in columns: TIOCGWINSZ on stdout, else the COLUMNS environment variable;
// nullopt when neither says (or stdout is not a terminal and COLUMNS is unset).
std::optional<std::size_t> terminal_columns();

// The terminal's height in lines (TIOCGWINSZ, else LINES); nullopt when neither says.
std::optional<std::size_t> terminal_rows();

}  // namespace dlx::cli
