// SPDX-License-Identifier: Apache-2.0
#include "experiment_locator.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "dlx/common/accounts.hpp"
#include "dlx/common/error.hpp"
#include "dlx/config/parse.hpp"
#include "dlx/store/experiment_layout.hpp"
#include "plugstack_files.hpp"
#include "slurm_job_name.hpp"

namespace dlx::cli {

namespace fs = std::filesystem;

namespace {

std::string command_output(const char* command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command, "r"), ::pclose);
  if (!pipe) return "";
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe.get())) output += buffer.data();
  return output;
}


bool is_digit_char(char c) { return c >= '0' && c <= '9'; }
bool is_blank_char(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The path in scontrol's "PlugStackConfig = /etc/slurm/plugstack.conf" line (the pattern
// PlugStackConfig\s*=\s*(\S+), read by hand: no std::regex).
std::string plugstack_path(std::string_view config) {
  constexpr std::string_view key = "PlugStackConfig";
  for (auto at = config.find(key); at != std::string_view::npos; at = config.find(key, at + 1)) {
    std::size_t i = at + key.size();
    while (i < config.size() && is_blank_char(config[i])) ++i;
    if (i == config.size() || config[i] != '=') continue;
    ++i;
    while (i < config.size() && is_blank_char(config[i])) ++i;
    const std::size_t start = i;
    while (i < config.size() && !is_blank_char(config[i])) ++i;
    if (i > start) return std::string(config.substr(start, i - start));
  }
  return "";
}

// The job id of "JOBID" or "JOBID_TASK" (digits; a Slurm job id fits in 32 bits, so at most 10).
std::optional<std::string> job_id_of(std::string_view text) {
  constexpr std::size_t kMaxDigits = 10;
  std::size_t i = 0;
  while (i < text.size() && is_digit_char(text[i])) ++i;
  const std::size_t digits = i;
  if (digits == 0 || digits > kMaxDigits) return std::nullopt;
  if (i < text.size() && text[i] == '_') {
    ++i;
    const std::size_t task = i;
    while (i < text.size() && is_digit_char(text[i])) ++i;
    if (i == task) return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  return std::string(text.substr(0, digits));
}

}  // namespace

std::string plugstack_argument(const std::string& key) {
  // Slurm's own parser reads slurm.conf; we only pick PlugStackConfig out of its report.
  const std::string path = plugstack_path(command_output("scontrol show config 2>/dev/null"));
  if (path.empty()) return "";
  // The file with dlx's line: plugstack.conf itself or one it includes (Debian: plugstack.conf.d/).
  const auto file = doctor::plugstack_file_with_dlx(path);
  if (!file) return "";
  std::istringstream plugstack(file->text);
  std::string line;
  while (std::getline(plugstack, line)) {
    if (line.find("dlx_spank.so") == std::string::npos || line.find_first_not_of(" \t") == line.find('#')) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
    }
  }
  return "";
}

fs::path locate_experiment(const std::string& job_or_directory) {
  // status() sets the error for a path that is not there too; only other errors (EACCES) say
  // that the path may exist but cannot be looked at.
  const auto cannot_read = [&](const std::error_code& error) {
    return Error(fmt::format("cannot read {}: {} (an experiment directory is readable by its owner's group "
                             "only: give one of your own, or ask its owner)",
                             job_or_directory, error.message()));
  };
  std::error_code unreadable;
  const auto status = fs::status(job_or_directory, unreadable);
  const bool absent = status.type() == fs::file_type::not_found;
  // e.g. another user's experiment: <storage_root>/<user> is mode 0750
  if (unreadable && !absent) throw cannot_read(unreadable);
  if (fs::is_directory(status)) {
    const auto snapshot = fs::status(fs::path(job_or_directory) / config::kSnapshotFileName, unreadable);
    if (unreadable && snapshot.type() != fs::file_type::not_found) throw cannot_read(unreadable);
    if (!fs::exists(snapshot)) {
      throw Error(fmt::format("{} is not an experiment directory (no {}; give the directory dlx made at "
                              "submission, <storage_root>/<user>/<name>, or its Slurm job id)",
                              job_or_directory, config::kSnapshotFileName));
    }
    return fs::absolute(job_or_directory);
  }
  const auto job_id = job_id_of(job_or_directory);
  if (!job_id) {
    if (absent) {
      throw Error(fmt::format("{}: no such directory (give an experiment directory, "
                              "<storage_root>/<user>/<name>, or a Slurm job id)", job_or_directory));
    }
    throw Error(fmt::format("'{}' is neither an experiment directory nor a Slurm job id", job_or_directory));
  }
  std::string root;
  if (const char* from_environment = std::getenv("DLX_STORAGE_ROOT")) root = from_environment;
  if (root.empty()) root = plugstack_argument("storage_root");
  if (root.empty()) {
    throw Error("cannot find the storage root: set DLX_STORAGE_ROOT or give the experiment directory");
  }
  fs::path link = store::job_link_path(fs::path(root) / account_name(::getuid()), *job_id);
  std::error_code error;
  fs::path directory = fs::read_symlink(link, error);
  if (!error) return directory;
  // None of its tasks has started (still pending, or its launch failed): the user's own job is
  // named after its experiment directory (slurm_job_name.hpp).
  if (const auto name = own_job_name(*job_id)) {
    directory = fs::path(root) / account_name(::getuid()) / *name;
    if (fs::is_regular_file(directory / config::kSnapshotFileName, error)) return directory;
  }
  throw Error(fmt::format("no experiment is known for job {} ({} does not exist and none of your jobs by that id "
                          "names an experiment directory: it is another user's, or not a dlx job; give the "
                          "experiment directory instead)",
                          *job_id, link.string()));
}

}  // namespace dlx::cli
