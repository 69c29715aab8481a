// SPDX-License-Identifier: Apache-2.0
#pragma once
// The experiment's `data: stage:` on this node, before the trainer starts: every rank stages
// through the node's per-user cache (dlx::data, data/include/dlx/data/stage.hpp): the first copies,
// the others wait on the entry's lock and reuse the copy, and each holds the entry (a shared lock)
// until its trainer exits, so that no eviction removes data in use. The trainer reads
//   DLX_DATA_DIRS  every dataset's directory, ':'-joined, in stage: order (always)
//   DLX_DATA_DIR   the one dataset's directory (only when stage: names exactly one)
//
// Where the cache lives on the node (the first that is set): the experiment's data: {to: DIR}
// (or the site's defaults: data: to:), plugstack.conf's local_dir= (DLX_SITE_LOCAL_DIR, from the
// plugin), $TMPDIR, /tmp; %n and %u expanded with the node's (SLURMD_NODENAME) and user's names.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "dlx/config/experiment.hpp"
#include "dlx/data/stage.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/launch/launch_env.hpp"
#include "dlx/slurm/task_placement.hpp"

namespace dlx::launch {

// What decides this task's node-local directories: the site's choices as the plugin passed them
// (DLX_SITE_LOCAL_DIR, DLX_SLURM_TMPFS), $TMPDIR, this node's name and this user's
// (data::local_root_context, the one `dlx data` uses too). dlx-launch builds it once per run.
data::LocalRootContext local_root_context(const env::TaskPlacement& placement, const env::EnvMap& env);

// The site's node-local directory: plugstack.conf's local_dir= (DLX_SITE_LOCAL_DIR), else Slurm's
// TmpFS (DLX_SLURM_TMPFS), else $TMPDIR, else /tmp, with %n and %u expanded for this node and
// user. The data cache goes there unless the experiment says data.to; the code copy always does
// (code_workdir.hpp). Throws data::DataError for a pattern that is not absolute or holds an
// unknown %-escape.
std::filesystem::path site_local_root(const data::LocalRootContext& local);

// The node-local base directory of the cache (see above): data.to, else site_local_root.
std::filesystem::path data_local_root(const config::DataConfig& data, const data::LocalRootContext& local);

// What the trial log says of one dataset: "dlx-launch: data on n1: /shared/mnist: copied 64.0 MB
// in 0.41 s (156 MB/s) to /local/dlx-1001/data/3f2a...", or "...: reused 64.0 MB (cached; found in
// 0.004 s) in ..."; `elapsed` is the whole staging call's time (what a reuse cost).
std::string describe_staged(const data::StagedDataset& dataset, const std::string& node_name, double elapsed);

class TrialData {
 public:
  // Stages data.stage under data_local_root(data, local); nullopt when it names nothing. `log`
  // (may be null) gets one line per dataset. Throws data::DataError.
  static std::optional<TrialData> stage(const config::DataConfig& data, const data::LocalRootContext& local,
                                        std::FILE* log);

  // DLX_DATA_DIRS, and DLX_DATA_DIR for a single dataset.
  EnvVars variables() const;
  const data::StagedData& staged() const noexcept { return staged_; }

 private:
  explicit TrialData(data::StagedData staged) : staged_(std::move(staged)) {}
  data::StagedData staged_;  // held (shared locks) until this object is destroyed
};

}  // namespace dlx::launch
