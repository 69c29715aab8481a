// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the ranks of one srun step of a trial share in trials/<id>/, on storage every node of the
// trial sees: the data barrier (data_barrier.hpp, .data.<run>/), the crash signal
// (peer_crash.hpp, .crash.<run>) and MASTER_PORT (master_port_rendezvous.hpp,
// .port.<run>.<ticket>). Each is named by the run it belongs to, and rank 0 removes the other
// runs' when it starts using its own, so that an earlier attempt's file never stands for this one.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "dlx/env/environment.hpp"
#include "dlx/env/trial_environment.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

// <SLURM_JOB_ID>.<SLURM_RESTART_COUNT>.<SLURM_STEP_ID>: the same on every rank of this step, new
// for every attempt (a requeue) and every srun. nullopt without a job id or a step id.
std::optional<std::string> step_run_key(const env::TrialEnvironment& trial, const env::TaskPlacement& placement,
                                        const env::EnvMap& env);

// Removes every entry of `directory` whose name starts with `prefix`, `keep` excepted (a file,
// or a directory with what it holds). Never throws: a stale entry is harmless (its run is over),
// and the next start tries again.
void remove_other_runs(const std::filesystem::path& directory, std::string_view prefix,
                       const std::filesystem::path& keep) noexcept;

}  // namespace dlx::launch
