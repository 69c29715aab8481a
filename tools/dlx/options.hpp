#pragma once
// Boost.Program_options glue shared by the subcommands: parse, turn its errors into UsageError.
#include <sstream>
#include <string>

#include <boost/program_options.hpp>

#include "commands.hpp"

namespace dlx::cli {

inline boost::program_options::variables_map parse_options(
    const Arguments& arguments, const boost::program_options::options_description& options,
    const boost::program_options::positional_options_description& positional) {
  namespace po = boost::program_options;
  po::variables_map values;
  try {
    po::store(po::command_line_parser(arguments).options(options).positional(positional).run(), values);
    po::notify(values);
  } catch (const po::error& e) {
    std::ostringstream help;
    help << options;
    std::string problem = e.what();
    // A missing positional argument: Boost names it by the option behind it ("the option
    // '--experiment' is required"), which the user never typed; say what is missing instead.
    if (const auto* missing = dynamic_cast<const po::required_option*>(&e);
        missing && positional.max_total_count() > 0) {
      std::string name = missing->get_option_name();
      name.erase(0, name.find_first_not_of('-'));
      if (const auto* option = options.find_nothrow(name, false);
          option && name == positional.name_for_position(0)) {
        problem = "missing argument: " + option->description();
      }
    }
    throw UsageError(problem + "\n" + help.str());
  }
  return values;
}

}  // namespace dlx::cli
