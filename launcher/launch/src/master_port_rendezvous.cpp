// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/master_port_rendezvous.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/launch/launch_error.hpp"
#include "dlx/launch/run_files.hpp"

namespace dlx::launch {

namespace {

constexpr std::string_view kPortPrefix = ".port.";
constexpr std::string_view kPortLine = "port ";
// Rank 0 usually publishes within milliseconds of the others' arrival (the same preparation on
// every node), and every millisecond here delays the trial's first step: the polls start 2 ms
// apart and double to 100 ms (a failed open of a name in one directory each time).
constexpr auto kFirstPortPoll = std::chrono::milliseconds(2);
constexpr auto kLastPortPoll = std::chrono::milliseconds(100);
constexpr auto kDefaultPortWait = std::chrono::seconds(900);

}  // namespace

std::optional<MasterPortRendezvous> MasterPortRendezvous::for_run(const env::TrialEnvironment& trial,
                                                                  const env::TaskPlacement& placement,
                                                                  const env::EnvMap& env) {
  if (!trial.in_trial() || placement.launcher != env::Launcher::srun || placement.world_size < 2) return std::nullopt;
  if (const auto given = env::lookup(env, "MASTER_PORT"); given && !given->empty()) return std::nullopt;
  const auto run = step_run_key(trial, placement, env);
  if (!run) return std::nullopt;
  const auto name = fmt::format("{}{}.{}", kPortPrefix, *run, trial.ticket.value_or(trial.trial_id));
  return MasterPortRendezvous(trial.record_path().parent_path() / name);
}

void MasterPortRendezvous::publish(int port) const {
  try {
    dlx::create_directories_with_mode(file_.parent_path());
    write_file_durably(file_, fmt::format("{}{}\n", kPortLine, port), 0640);
  } catch (const std::exception& e) {
    throw LaunchError(fmt::format("cannot tell the other ranks which MASTER_PORT rank 0 listens on: {} (is the "
                                  "experiment directory writable?)", e.what()));
  }
}

void MasterPortRendezvous::remove_stale() const noexcept { remove_other_runs(file_.parent_path(), kPortPrefix, file_); }

std::optional<int> MasterPortRendezvous::published() const {
  std::ifstream in(file_);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  int port = 0;
  const std::string_view digits = std::string_view(line).substr(std::min(line.size(), kPortLine.size()));
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (!line.starts_with(kPortLine) || error != std::errc() || end != digits.data() + digits.size() || port < 1 ||
      port > 65535) {
    throw LaunchError(fmt::format("{} should hold \"port N\" as rank 0 writes it, not \"{}\" (remove it and "
                                  "requeue the trial)", file_.string(), line));
  }
  return port;
}

std::optional<int> MasterPortRendezvous::wait(std::chrono::milliseconds deadline,
                                              const std::function<bool()>& stop) const {
  const auto give_up = std::chrono::steady_clock::now() + deadline;
  for (auto poll = kFirstPortPoll;; poll = std::min(2 * poll, kLastPortPoll)) {
    // What ended the run (a notice, a crash or refusal another rank announced) first: it stands
    // even where rank 0 had published, or left a file that holds no port.
    if (stop && stop()) return std::nullopt;
    if (const auto port = published()) return port;
    if (std::chrono::steady_clock::now() >= give_up) {
      throw LaunchError(fmt::format(
          "rank 0 did not say within {:g} s which MASTER_PORT it listens on ({} never appeared): rank 0's "
          "output says why (`dlx logs`); a rank 0 that needs longer to start (a slow data copy) needs a "
          "longer DLX_MASTER_PORT_WAIT_S, in seconds",
          std::chrono::duration<double>(deadline).count(), file_.string()));
    }
    std::this_thread::sleep_for(poll);
  }
}

std::chrono::milliseconds MasterPortRendezvous::deadline_from(const env::EnvMap& env,
                                                              std::chrono::milliseconds staging) {
  const auto given = env::lookup(env, "DLX_MASTER_PORT_WAIT_S");
  const std::chrono::milliseconds own = given && !given->empty()
                                            ? std::chrono::seconds(env::parse_non_negative("DLX_MASTER_PORT_WAIT_S", *given))
                                            : std::chrono::milliseconds(kDefaultPortWait);
  return own + staging;
}

}  // namespace dlx::launch
