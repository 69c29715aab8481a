// SPDX-License-Identifier: Apache-2.0
#include "slurm_job_name.hpp"

#include <chrono>
#include <sstream>
#include <vector>

#include "dlx/common/bounded_command.hpp"
#include "logs_slurm.hpp"

namespace dlx::cli {

namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::istringstream stream{std::string(text)};
  for (std::string line; std::getline(stream, line);) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// squeue's answer, or nullopt when it cannot run or fails (a job it no longer knows).
std::optional<std::string> ask_squeue(const std::vector<std::string>& argv) {
  CommandLimits limits;
  limits.timeout = std::chrono::seconds(20);
  limits.max_output = std::size_t{16} << 20;
  try {
    const auto result = run_bounded(argv, limits, {{"LC_ALL", "C"}});
    if (result.exit_code != 0) return std::nullopt;
    return result.out;
  } catch (const CommandError&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::string> newest_job_id(std::string_view squeue_lines) {
  std::optional<unsigned long long> newest;
  for (const auto& line : lines_of(squeue_lines)) {
    if (!is_job_id(line) || line.find('_') != std::string::npos) continue;
    const auto id = std::stoull(line);
    if (!newest || id > *newest) newest = id;
  }
  if (!newest) return std::nullopt;
  return std::to_string(*newest);
}

std::optional<std::string> experiment_name_of(std::string_view squeue_lines) {
  const auto lines = lines_of(squeue_lines);
  if (lines.empty()) return std::nullopt;
  for (const auto& line : lines) {
    if (line != lines.front()) return std::nullopt;
  }
  const std::string& name = lines.front();
  // squeue -n takes a comma-separated list; dlx's directory names have no comma.
  if (name.front() == '.' || name.find_first_of("/,") != std::string::npos) return std::nullopt;
  for (const char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
  }
  return name;
}

std::optional<std::string> own_array_job_named(const std::string& name) {
  if (!experiment_name_of(name)) return std::nullopt;  // never into squeue's options
  const auto out = ask_squeue({"squeue", "--me", "-h", "-t", "all", "-n", name, "-O", "ArrayJobID:20"});
  if (!out) return std::nullopt;
  return newest_job_id(*out);
}

std::optional<std::string> own_job_name(const std::string& job_id) {
  if (!is_job_id(job_id)) return std::nullopt;
  const auto out = ask_squeue({"squeue", "--me", "-h", "-t", "all", "-j", job_id, "-o", "%j"});
  if (!out) return std::nullopt;
  return experiment_name_of(*out);
}

}  // namespace dlx::cli
