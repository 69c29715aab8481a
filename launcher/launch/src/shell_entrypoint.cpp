// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/shell_entrypoint.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace dlx::launch {

namespace {

// Characters that make the shell do more with a word than run it as it stands.
constexpr std::string_view kShellSpecial = "'\"\\$`*?[]{}()<>|&;#~=!";

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// NAME=value, with a plain NAME and value.
bool is_assignment(std::string_view word) {
  const auto equals = word.find('=');
  if (equals == std::string_view::npos || equals == 0) return false;
  const auto name = word.substr(0, equals);
  const bool name_ok = !std::isdigit(static_cast<unsigned char>(name.front())) &&
                       std::ranges::all_of(name, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  return name_ok && word.substr(equals + 1).find_first_of(kShellSpecial) == std::string_view::npos;
}

bool is_reserved_word(std::string_view word) {
  static constexpr std::array<std::string_view, 16> kReserved = {
      "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in", "function",
      "select", "time"};
  return std::ranges::find(kReserved, word) != kReserved.end();
}

}  // namespace

std::vector<std::string> with_notices_trapped_in_shell(const std::vector<std::string>& command) {
  if (command.size() != 3 || command[0] != "/bin/sh" || command[1] != "-c") return command;
  // On the string's own line, so that the shell's errors still say "1:" (shell_could_not_run).
  return {command[0], command[1], "trap : TERM INT USR1 USR2; " + command[2]};
}

std::optional<std::string> shell_command_program(std::string_view command) {
  std::size_t at = 0;
  for (;;) {
    while (at < command.size() && is_blank(command[at])) ++at;
    if (at == command.size() || command[at] == '\n') return std::nullopt;
    auto end = at;
    while (end < command.size() && !is_blank(command[end]) && command[end] != '\n') ++end;
    const auto word = command.substr(at, end - at);
    if (is_assignment(word)) {
      at = end;
      continue;
    }
    if (word.find_first_of(kShellSpecial) != std::string_view::npos || is_reserved_word(word)) return std::nullopt;
    return std::string(word);
  }
}

bool shell_could_not_run(int status, std::string_view program, std::string_view last_line) {
  if (status != 127 && status != 126) return false;
  // "/bin/sh: " (the name dlx-launch runs it by), then dash's "1: " or bash's "line 1: ".
  std::string_view rest = last_line;
  for (const std::string_view shell : {"/bin/sh: ", "sh: "}) {
    if (rest.starts_with(shell)) {
      rest.remove_prefix(shell.size());
      break;
    }
  }
  if (rest.size() == last_line.size()) return false;
  for (const std::string_view line : {"1: ", "line 1: "}) {
    if (rest.starts_with(line)) {
      rest.remove_prefix(line.size());
      break;
    }
  }
  if (!rest.starts_with(program) || !rest.substr(program.size()).starts_with(": ")) return false;
  rest.remove_prefix(program.size() + 2);
  static constexpr std::array<std::string_view, 3> kNotFound = {"not found", "command not found",
                                                                 "No such file or directory"};
  static constexpr std::array<std::string_view, 2> kNotRunnable = {"Permission denied", "Is a directory"};
  if (status == 127) return std::ranges::find(kNotFound, rest) != kNotFound.end();
  return std::ranges::find(kNotRunnable, rest) != kNotRunnable.end();
}

}  // namespace dlx::launch
