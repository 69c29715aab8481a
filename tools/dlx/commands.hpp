// SPDX-License-Identifier: Apache-2.0
#pragma once
// One function per `dlx` subcommand: argv after the subcommand name; returns the exit status.
// Usage errors throw UsageError, a request for help HelpRequested (options.hpp); everything else
// reports itself.
#include <string>
#include <utility>
#include <vector>

#include "dlx/common/error.hpp"

namespace dlx::cli {

class UsageError : public Error {
 public:
  explicit UsageError(const std::string& problem, std::string usage = "")
      : Error(problem), usage_(std::move(usage)) {}
  // What to show under the problem: the command's usage line and options (options.hpp's
  // usage_text); empty: the list of dlx's commands.
  const std::string& usage() const noexcept { return usage_; }

 private:
  std::string usage_;
};

using Arguments = std::vector<std::string>;

int run_validate(const Arguments& arguments);
int run_plan(const Arguments& arguments);
int run_convert_determined(const Arguments& arguments);
int run_status(const Arguments& arguments);
int run_cluster(const Arguments& arguments, const std::string& program_path);
int run_ckpt(const Arguments& arguments);
int run_replay(const Arguments& arguments);
int run_export(const Arguments& arguments);
int run_report(const Arguments& arguments);
int run_doctor(const Arguments& arguments);
int run_storage(const Arguments& arguments);
int run_logs(const Arguments& arguments);
int run_data(const Arguments& arguments);

}  // namespace dlx::cli
