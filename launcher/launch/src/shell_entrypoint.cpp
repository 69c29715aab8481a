// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/shell_entrypoint.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

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

// Builtins of dash and bash, which `exec` cannot run (some are also programs, but the shell runs
// its own).
bool is_builtin(std::string_view word) {
  static constexpr std::array<std::string_view, 40> kBuiltins = {
      ".",      ":",     "[",        "alias",   "bg",     "break",  "cd",     "command", "continue", "echo",
      "eval",   "exec",  "exit",     "export",  "false",  "fg",     "getopts", "hash",   "jobs",     "kill",
      "local",  "printf", "pwd",     "read",    "readonly", "return", "set",    "shift",  "source",   "test",
      "times",  "trap",  "true",     "type",    "ulimit", "umask",  "unalias", "unset",  "wait",     "builtin"};
  return std::ranges::find(kBuiltins, word) != kBuiltins.end();
}

// Where the program word starts (after leading `NAME=value` assignments) and the word itself,
// when it is a plain word the shell runs as it stands (shell_command_program).
struct ProgramWord {
  std::size_t at = 0;
  std::string_view word;
};

std::optional<ProgramWord> program_word(std::string_view command) {
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
    return ProgramWord{at, word};
  }
}

// Whether the whole string is one command (with its arguments, quotes and redirections): nothing
// that makes it several (`;`, `&&`, `|`, `&`, a newline), a subshell or group, or a command
// substitution, outside quotes; a comment ends it. What is not plainly one is not one.
bool is_one_command(std::string_view command) {
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
      continue;
    }
    if (c == '\\') {  // escapes the next character, in double quotes and outside
      if (++i == command.size()) return false;
      continue;
    }
    if (quote == '"') {
      if (c == '"') quote = 0;
      if (c == '`' || (c == '$' && i + 1 < command.size() && command[i + 1] == '(')) return false;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      continue;
    }
    if (c == '#' && (i == 0 || is_blank(command[i - 1]))) return true;  // a comment, to the end
    if (c == '&' && i > 0 && (command[i - 1] == '>' || command[i - 1] == '<')) continue;  // 2>&1
    // The end of the line YAML's `entrypoint: >` keeps: nothing after it but blanks and newlines.
    if (c == '\n' && command.find_first_not_of(" \t\n", i) == std::string_view::npos) return true;
    if (std::string_view(";&|(){}`\n").find(c) != std::string_view::npos) return false;
  }
  return quote == 0;
}

}  // namespace

std::vector<std::string> trainer_shell_command(const std::vector<std::string>& command) {
  if (command.size() != 3 || command[0] != "/bin/sh" || command[1] != "-c") return command;
  const std::string& string = command[2];
  if (const auto program = program_word(string); program && !is_builtin(program->word) && is_one_command(string)) {
    // `A=1 exec prog`: the assignments reach prog (POSIX: exec is a special builtin).
    return {command[0], command[1], string.substr(0, program->at) + "exec " + string.substr(program->at)};
  }
  // On the string's own line, so that the shell's errors still say "1:" (shell_could_not_run).
  return {command[0], command[1], "trap : TERM INT USR1 USR2; " + string};
}

std::optional<std::string> shell_command_program(std::string_view command) {
  const auto program = program_word(command);
  if (!program) return std::nullopt;
  return std::string(program->word);
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
  // A one-command string runs as `exec PROGRAM` (trainer_shell_command): dash "1: exec: PROGRAM:
  // not found", bash "exec: PROGRAM: cannot execute: Permission denied".
  const bool exec = rest.starts_with("exec: ");
  if (exec) rest.remove_prefix(6);
  if (!rest.starts_with(program) || !rest.substr(program.size()).starts_with(": ")) return false;
  rest.remove_prefix(program.size() + 2);
  if (exec && rest.starts_with("cannot execute: ")) rest.remove_prefix(16);
  static constexpr std::array<std::string_view, 3> kNotFound = {"not found", "command not found",
                                                                 "No such file or directory"};
  static constexpr std::array<std::string_view, 2> kNotRunnable = {"Permission denied", "Is a directory"};
  if (status == 127) return std::ranges::find(kNotFound, rest) != kNotFound.end();
  return std::ranges::find(kNotRunnable, rest) != kNotRunnable.end();
}

std::string without_added_exec(std::string_view last_line, std::string_view program) {
  std::string line(last_line);
  const std::string added = "exec: " + std::string(program) + ": ";
  const auto at = line.find(added);
  if (at == std::string::npos) return line;
  line.erase(at, 6);  // "exec: "
  const auto reason = at + program.size() + 2;
  if (line.compare(reason, 16, "cannot execute: ") == 0) line.erase(reason, 16);
  return line;
}

}  // namespace dlx::launch
