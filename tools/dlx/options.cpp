// SPDX-License-Identifier: Apache-2.0
// Boost.Program_options glue shared by the commands (options.hpp).
#include "options.hpp"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "dlx/config/display_text.hpp"

namespace dlx::cli {

namespace po = boost::program_options;

namespace {

bool is_help_option(const std::string& word) { return word == "--help" || word == "-h"; }

// The first argument that is neither an option nor an option's value (`options` says which
// options take one): `up` in `dlx cluster --state-dir DIR up`. nullptr when there is none.
const std::string* first_operand(const Arguments& arguments, const po::options_description& options) {
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const auto& word = arguments[i];
    if (word == "--") return i + 1 < arguments.size() ? &arguments[i + 1] : nullptr;
    if (word == "-" || !word.starts_with("-")) return &word;
    if (!word.starts_with("--") || word.find('=') != std::string::npos) continue;
    const auto* option = options.find_nothrow(word.substr(2), false);
    if (option && option->semantic()->max_tokens() > 0) ++i;  // its value
  }
  return nullptr;
}

std::string usage_line(const CommandLine& command) {
  return fmt::format("usage: dlx {} {}\n", command.name, command.synopsis);
}

std::string subcommands_text(const CommandLine& command) {
  if (command.subcommands.empty()) return "";
  std::size_t width = 0;
  for (const auto& subcommand : command.subcommands) width = std::max(width, subcommand.name.size());
  std::string out = "\nSubcommands:\n";
  for (const auto& subcommand : command.subcommands) {
    out += fmt::format("  {:<{}}  {}\n", subcommand.name, width, subcommand.summary);
  }
  return out;
}

std::string options_text(const CommandLine& command) {
  std::ostringstream out;
  out << command.options;
  return "\n" + out.str();
}

}  // namespace

CommandLine::CommandLine(std::string command, std::string usage, std::string paragraph, std::string examples)
    : name(std::move(command)), synopsis(std::move(usage)), description(std::move(paragraph)),
      example(std::move(examples)) {
  options.add_options()("help,h", "print this help and exit");
}

bool asks_for_help(const Arguments& arguments) {
  const auto end = std::find(arguments.begin(), arguments.end(), "--");
  return std::any_of(arguments.begin(), end, is_help_option);
}

std::string help_text(const CommandLine& command) {
  std::string out = usage_line(command) + "\n" + command.description + "\n" + subcommands_text(command) +
                    options_text(command);
  if (!command.example.empty()) {
    const bool several = command.example.find('\n') != std::string::npos;
    out += several ? "\nExamples:\n" : "\nExample:\n";
    std::istringstream lines(command.example);
    for (std::string line; std::getline(lines, line);) out += "  " + line + "\n";
  }
  if (!command.subcommands.empty()) {
    out += fmt::format("\n`dlx help {0} SUBCOMMAND` (or `dlx {0} SUBCOMMAND --help`) describes one.\n",
                       command.name);
  }
  return out;
}

std::string usage_text(const CommandLine& command) {
  return usage_line(command) + subcommands_text(command) + options_text(command) +
         fmt::format("\n`dlx help {}` says more.\n", command.name);
}

po::variables_map parse_options(const Arguments& arguments, const CommandLine& command) {
  if (asks_for_help(arguments)) throw HelpRequested(help_text(command));
  po::options_description accepted;
  accepted.add(command.options).add(command.operands);
  po::variables_map values;
  try {
    po::store(po::command_line_parser(arguments).options(accepted).positional(command.positional).run(), values);
    // `--he`: Boost takes an unambiguous prefix for the option.
    if (values.count("help")) throw HelpRequested(help_text(command));
    po::notify(values);
  } catch (const po::error& e) {
    std::string problem = e.what();
    // A missing operand: Boost names it by the option behind it ("the option '--experiment' is
    // required"), which the user never typed; say what is missing instead.
    if (const auto* missing = dynamic_cast<const po::required_option*>(&e)) {
      std::string name = missing->get_option_name();
      name.erase(0, name.find_first_not_of('-'));
      if (const auto* operand = command.operands.find_nothrow(name, false)) {
        problem = "missing argument: " + operand->description();
      }
    }
    throw UsageError(problem, usage_text(command));
  }
  return values;
}

void answer_help(const Arguments& arguments, const CommandLine& command) {
  if (!asks_for_help(arguments)) return;
  const auto* word = first_operand(arguments, command.options);
  if (word == nullptr) throw HelpRequested(help_text(command));
  std::vector<std::string> names;
  for (const auto& subcommand : command.subcommands) {
    if (subcommand.name == *word) throw HelpRequested(help_text(subcommand.command_line()));
    names.push_back(subcommand.name);
  }
  throw UsageError(fmt::format("unknown dlx {} subcommand '{}' ({})", command.name, config::abbreviated(*word),
                               fmt::join(names, ", ")),
                   usage_text(command));
}

}  // namespace dlx::cli
