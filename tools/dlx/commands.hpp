#pragma once
// One function per `dlx` subcommand: argv after the subcommand name; returns the exit status.
// Usage errors throw UsageError; everything else reports itself.
#include <string>
#include <vector>

#include "dlx/common/error.hpp"

namespace dlx::cli {

class UsageError : public Error {
 public:
  using Error::Error;
};

using Arguments = std::vector<std::string>;

int run_validate(const Arguments& arguments);
int run_plan(const Arguments& arguments);
int run_status(const Arguments& arguments);
int run_cluster(const Arguments& arguments, const std::string& program_path);
int run_ckpt(const Arguments& arguments);
int run_replay(const Arguments& arguments);
int run_doctor(const Arguments& arguments);
int run_storage(const Arguments& arguments);

}  // namespace dlx::cli
