#pragma once
// Boost.Program_options glue shared by the subcommands: parse, turn its errors into UsageError.
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
    throw UsageError(std::string(e.what()) + "\n" + [&] {
      std::ostringstream help;
      help << options;
      return help.str();
    }());
  }
  return values;
}

}  // namespace dlx::cli
