// SPDX-License-Identifier: Apache-2.0
#pragma once
// Boost.Program_options glue shared by the commands: what each one accepts and says of itself
// (`dlx COMMAND --help`, `dlx help COMMAND`), parsing, and Boost's errors as UsageError.
#include <exception>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "commands.hpp"

namespace dlx::cli {

struct CommandLine;

// One word of a command made of subcommands (`dlx ckpt ls`): its line in the command's help and
// its own command line.
struct Subcommand {
  std::string name;
  std::string summary;
  CommandLine (*command_line)();
};

// A command's interface, one per command and subcommand: the usage line, a paragraph on what it
// does, its options, an example. Operands (FILE, JOBID) are options to Boost (positional ones)
// but not to the user: they are declared in `operands`, which is parsed and never shown.
struct CommandLine {
  // command: "status", "ckpt ls"; usage: "JOBID|EXPERIMENT_DIR [--json]"; the paragraph and the
  // examples (one command per line) in lines of at most 80 columns.
  CommandLine(std::string command, std::string usage, std::string paragraph, std::string examples = "");

  std::string name;
  std::string synopsis;
  std::string description;
  std::string example;
  boost::program_options::options_description options{"Options"};  // shown; starts with -h/--help
  boost::program_options::options_description operands;            // parsed, never shown
  boost::program_options::positional_options_description positional;
  std::vector<Subcommand> subcommands;  // empty but for a command made of subcommands
};

// Thrown when the arguments ask for help, with the text to print: main prints it to stdout and
// exits 0 (CLI11's CallForHelp). parse_options and answer_help throw it, so no command handles
// --help itself.
class HelpRequested : public std::exception {
 public:
  explicit HelpRequested(std::string text) : text_(std::move(text)) {}
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  std::string text_;
};

// --help or -h among the arguments (before a `--`, after which every word is an operand).
bool asks_for_help(const Arguments& arguments);

// What `dlx COMMAND --help` prints: usage, description, subcommands, options, example.
std::string help_text(const CommandLine& command);

// What a usage error shows under its problem: the usage line and the options.
std::string usage_text(const CommandLine& command);

// The parsed arguments. Throws HelpRequested when they ask for help (before parsing, so that
// `dlx status --help` needs no job id), UsageError (with usage_text) when Boost rejects them.
boost::program_options::variables_map parse_options(const Arguments& arguments, const CommandLine& command);

// For a command made of subcommands: when the arguments ask for help, throws HelpRequested with
// the help of the subcommand they name (the first word that is neither an option nor an
// option's value), or the command's own when they name none, or UsageError for an unknown one.
// Returns when they do not ask for help.
void answer_help(const Arguments& arguments, const CommandLine& command);

}  // namespace dlx::cli
