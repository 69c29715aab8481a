// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/data_barrier.hpp"

#include <fstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/run_files.hpp"

namespace dlx::launch {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = ".data.";
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr auto kDefaultDeadline = std::chrono::minutes(30);

std::optional<std::string> first_line(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::optional<DataBarrier> DataBarrier::for_run(const env::TrialEnvironment& trial,
                                                const env::TaskPlacement& placement, const env::EnvMap& env) {
  if (!trial.in_trial() || placement.launcher != env::Launcher::srun || placement.num_nodes < 2) return std::nullopt;
  const auto run = step_run_key(trial, placement, env);
  if (!run) return std::nullopt;
  return DataBarrier(trial.record_path().parent_path() / fmt::format("{}{}", kPrefix, *run), placement.num_nodes);
}

fs::path DataBarrier::node_file(int node_index) const { return directory_ / fmt::format("node-{}", node_index); }

void DataBarrier::publish(int node_index, const std::string& line) const {
  dlx::create_directories_with_mode(directory_);
  write_file_durably(node_file(node_index), line + "\n", 0640);
}

void DataBarrier::arrive(int node_index, std::string_view node_name) const {
  try {
    publish(node_index, fmt::format("ready {}", node_name));
  } catch (const std::exception& e) {
    throw LaunchError(fmt::format("cannot tell rank 0 that the data is staged on {}: {} (is the "
                                  "experiment directory writable?)", node_name, e.what()));
  }
}

void DataBarrier::fail(int node_index, std::string_view node_name, std::string_view why) const noexcept {
  try {
    publish(node_index, fmt::format("failed {}: {}", node_name, why));
  } catch (const std::exception& e) {
    fmt::print(stderr, "dlx-launch: warning: cannot tell rank 0 that staging failed on {} ({}): it waits until "
               "its deadline\n", node_name, e.what());
  }
}

bool DataBarrier::wait_for_all(std::chrono::milliseconds deadline, const std::function<bool()>& stop) const {
  const auto give_up = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    std::vector<int> missing;
    for (int node = 0; node < num_nodes_; ++node) {
      const auto line = first_line(node_file(node));
      if (!line) {
        missing.push_back(node);
      } else if (line->starts_with("failed ")) {
        throw LaunchError(fmt::format("the data could not be staged on node {} ({}): {}", node,
                                      line->substr(7, line->find(':') - 7), line->substr(line->find(':') + 2)));
      }
    }
    if (missing.empty()) return true;
    if (stop && stop()) return false;
    if (std::chrono::steady_clock::now() >= give_up) {
      throw LaunchError(fmt::format(
          "node{} {} (SLURM_NODEID) of this trial did not stage the data within {} s (their output "
          "says why; a slow copy needs a longer DLX_DATA_STAGE_TIMEOUT, in seconds)",
          missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
          std::chrono::duration_cast<std::chrono::seconds>(deadline).count()));
    }
    std::this_thread::sleep_for(kPoll);
  }
}

void DataBarrier::remove_stale() const noexcept { remove_other_runs(directory_.parent_path(), kPrefix, directory_); }

std::chrono::milliseconds DataBarrier::deadline_from(const env::EnvMap& env) {
  const auto given = env::lookup(env, "DLX_DATA_STAGE_TIMEOUT");
  if (!given || given->empty()) return kDefaultDeadline;
  return std::chrono::seconds(env::parse_non_negative("DLX_DATA_STAGE_TIMEOUT", *given));
}

}  // namespace dlx::launch
