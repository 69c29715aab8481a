// SPDX-License-Identifier: Apache-2.0
#include "dlx/launch/peer_crash.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/launch/run_files.hpp"

namespace dlx::launch {

namespace {

constexpr std::string_view kPrefix = ".crash.";

}  // namespace

std::optional<PeerCrashSignal> PeerCrashSignal::for_run(const env::TrialEnvironment& trial,
                                                        const env::TaskPlacement& placement,
                                                        const env::EnvMap& env) {
  if (!trial.in_trial() || placement.launcher != env::Launcher::srun || placement.world_size < 2) return std::nullopt;
  const auto run = step_run_key(trial, placement, env);
  if (!run) return std::nullopt;
  return PeerCrashSignal(trial.record_path().parent_path() / fmt::format("{}{}", kPrefix, *run));
}

std::optional<TrialCrash> PeerCrashSignal::peer_crash() const noexcept {
  try {
    std::ifstream in(path_);
    if (!in) return std::nullopt;
    std::string line;
    std::getline(in, line);
    // Published by a hard link of a complete file; a line this version did not write (or none)
    // still ends the run, as an unknown crash.
    const auto json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_object() && json.value("status", nlohmann::json()).is_number_integer() &&
        json.value("where", nlohmann::json()).is_string() && json.value("error", nlohmann::json()).is_string()) {
      const auto refused = json.value("refused", nlohmann::json(false));
      const auto gap = json.value("snapshot_gap", nlohmann::json(""));
      return TrialCrash{json["status"].get<int>(), json["where"].get<std::string>(), json["error"].get<std::string>(),
                        refused.is_boolean() && refused.get<bool>(), gap.is_string() ? gap.get<std::string>() : ""};
    }
    return TrialCrash{1, "another rank", line.empty() ? std::string("crashed") : line};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<TrialCrash> PeerCrashSignal::announce(const TrialCrash& crash) const noexcept {
  try {
    dlx::create_directories_with_mode(path_.parent_path());  // a trainer that died early
    const auto temporary = temporary_path_for(path_);
    {
      nlohmann::json line{{"where", crash.where}, {"status", crash.status}, {"error", crash.error}};
      if (crash.refused) line["refused"] = true;
      if (!crash.snapshot_gap.empty()) line["snapshot_gap"] = crash.snapshot_gap;
      std::ofstream out(temporary);
      out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      out.close();
      if (!out) throw std::system_error(errno, std::generic_category(), temporary.string());
    }
    ::chmod(temporary.c_str(), 0640);  // the layout's mode, not the umask's
    // link() fails with EEXIST when another rank announced first: its crash stands.
    const int linked = ::link(temporary.c_str(), path_.c_str());
    const int error = errno;
    ::unlink(temporary.c_str());
    if (linked == 0) return std::nullopt;
    if (error == EEXIST) return peer_crash();
    throw std::system_error(error, std::generic_category(), "link " + path_.string());
  } catch (const std::exception& failure) {
    fmt::print(stderr, "dlx-launch: warning: cannot tell the other ranks of this crash ({}): "
               "they may wait until the time limit\n", failure.what());
    return std::nullopt;
  }
}

void PeerCrashSignal::remove_stale() const noexcept { remove_other_runs(path_.parent_path(), kPrefix, path_); }

}  // namespace dlx::launch
