// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where the trainer runs when the experiment has a code snapshot (store/code_snapshot.hpp): a
// node-local copy of <experiment>/code/, made by dlx-launch as the user before the trainer starts,
// one per trial, job step and attempt (a requeued attempt gets a fresh copy of the same snapshot),
// or the snapshot itself when code.run_from is `shared` (a site whose shared storage is fast enough).
//
// Node-local copies live in <the site's node-local directory>/dlx-<uid>/ (trial_data.hpp's
// site_local_root: local_dir=, else TmpFS, else $TMPDIR, else /tmp), opened and checked by the one
// function both it and the data cache use (dlx/data/node_local_dir.hpp: the base and every
// directory above it by the storage root's rule, dlx-<uid> the user's own and 0700), as
// code-<job>-<step>-<restart>-<trial>/. Everything below is reached relative to that directory's
// handle: the lock, the marker, the copy, its removal, and the trainer's working directory
// (entered with fchdir; its path, given as PWD and DLX_CODE_DIR, is proven to name the same
// directory). A copy is one trial's (the trials a task runs at once have one each); the ranks of
// the trial on one node share it, through an OFD fcntl lock on code-...lock
// (dlx/common/file_lock.hpp):
//   1. a rank takes the lock shared (it waits only while another rank copies) and looks for the
//      marker code-....done; found, it keeps the shared lock while its trainer runs;
//   2. not found, it converts to the exclusive lock, granted only when no other rank holds one,
//      removes a half-made copy, copies (the snapshot, then what earlier attempts of the trial
//      kept: restored_outputs.hpp), marks, and converts back to shared; a conversion refused
//      (another rank is looking too) lets go and tries again after a random pause of 5-50 ms.
//      No rank ever waits for the exclusive lock: the others hold their shared ones for as long
//      as their trainers run, which wait for this rank's;
//   3. when its trainer has exited, a rank lets go of its shared lock and tries the exclusive one:
//      the rank that gets it while the marker is there is the last out. It keeps what the
//      trainers wrote in the copy (trial_outputs.hpp), removes the copy, then the marker and the
//      lock file; the others leave it.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "dlx/common/file_lock.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/config/experiment.hpp"
#include "dlx/env/environment.hpp"
#include "dlx/launch/snapshot_gap.hpp"

namespace dlx::launch {

class CodeWorkdir {
 public:
  // nullopt when the experiment has no code snapshot (no code.json). Throws LaunchError.
  // `trial_id`: the trial the searcher gave this rank (its outputs/ are restored into a new copy:
  // restored_outputs.hpp); `local_root`: where node-local copies go (site_local_root); `log`: where
  // the rank that copies says so and what it restored (the first node's stderr; null: silent).
  static std::optional<CodeWorkdir> prepare(const std::filesystem::path& experiment_dir,
                                            const config::Experiment& experiment, const env::EnvMap& env,
                                            std::int64_t trial_id, const std::filesystem::path& local_root,
                                            std::FILE* log);
  CodeWorkdir(CodeWorkdir&&) noexcept = default;
  CodeWorkdir& operator=(CodeWorkdir&&) = delete;
  CodeWorkdir(const CodeWorkdir&) = delete;
  ~CodeWorkdir();

  const std::filesystem::path& code_dir() const { return code_dir_; }        // DLX_CODE_DIR
  const std::filesystem::path& working_dir() const { return working_dir_; }  // the trainer's cwd (PWD)
  // The snapshot and what it was made from, to explain a crash on a name it lacks (snapshot_gap.hpp).
  const SnapshotOrigin& origin() const noexcept { return origin_; }
  // Makes the working directory this process's, through the handle it was checked with (fchdir);
  // the trainer inherits it. Throws LaunchError.
  void enter() const;

  // A node-local copy (not the shared snapshot itself).
  bool node_local() const noexcept { return static_cast<bool>(scratch_); }
  // When the copy was complete: a file of the copy written later is the trainer's.
  std::filesystem::file_time_type copied_at() const noexcept { return copied_at_; }
  // Once this rank's trainer has exited: whether it is the last rank of the step on this node in
  // the copy (it lets go of its shared lock, then tries the exclusive one). Then it holds the copy
  // alone until it is removed (the destructor) and may read it through copy_view(); otherwise the
  // destructor leaves the copy to the last rank. Never waits; false for the shared snapshot, and
  // when the lock fails. Asked once: later calls give the first answer.
  bool alone_in_copy();
  // The copy's top, reached through the checked handle of the node-local directory.
  std::filesystem::path copy_view() const;

 private:
  CodeWorkdir() = default;
  std::filesystem::path code_dir_, working_dir_;
  SnapshotOrigin origin_;
  UniqueFd working_fd_;
  UniqueFd scratch_;  // <base>/dlx-<uid>; empty when running from the shared snapshot
  std::string key_;   // code-<job>-<step>-<restart>-<trial>, the copy's name in scratch_
  std::filesystem::file_time_type copied_at_{};
  bool leaving_ = false;  // alone_in_copy() was asked
  bool alone_ = false;    // ... and this rank is the last: it holds the copy exclusively
  FileLock lock_;
};

}  // namespace dlx::launch
