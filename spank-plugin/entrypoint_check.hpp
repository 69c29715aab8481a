// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator's look at the script an entrypoint runs, before anything is queued: a script that
// is not in the code snapshot (a typo, a file git or .dlxignore leaves out) would fail every trial
// with Python's "can't open file", each after waiting in the queue; sbatch refuses it instead,
// naming the closest file the snapshot has. Without a snapshot, trials run the files as they are
// when they start (the job script may still make the file), so a script missing now is a note.
//
// Only what a look can be sure of: a relative script (an absolute one may exist only on the nodes
// or in a container image), named plainly: after a Python or shell interpreter
// ([python3, train.py, ...], "python3 train.py --lr 0.1"; python, python3, python3.11, sh, bash,
// by name or path) or as the program itself when it is a relative path ([./train.sh],
// "scripts/run.sh"). An interpreter option before the script (-m, -u, -c, ...) or a shell string
// with shell syntax in it (quotes, $, ;, |, ...) is left alone.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dlx/config/experiment.hpp"

namespace dlx::spank {

// The relative script `experiment`'s entrypoint runs (above), as written; nullopt when it names
// none that a look can check.
std::optional<std::string> entrypoint_script(const config::Experiment& experiment);

// With a code snapshot: `files` its paths relative to its root (what git lists), `workdir` where
// trials start, relative to that root ("" for the root). The refusal when the script is not in
// it (nor a directory of it: `python3 pkg` runs pkg/__main__.py), saying where it looked, the
// closest file of the snapshot (same extension), and whether the file exists in `root` but the
// snapshot leaves it out; nullopt when it is there or no script can be checked.
std::optional<std::string> script_missing_from_snapshot(const config::Experiment& experiment,
                                                        const std::vector<std::string>& files,
                                                        const std::filesystem::path& root, const std::string& workdir);

// Without a snapshot: a note when the script is not in `start_dir` (where trials start) now.
std::optional<std::string> script_missing_from(const config::Experiment& experiment,
                                               const std::filesystem::path& start_dir);

// The permission bits of a regular file at a path relative to the snapshot's root, nullopt when
// the snapshot holds no regular file there (a symbolic link, a directory, nothing).
using SnapshotModeOf = std::function<std::optional<mode_t>(const std::string& path)>;

// With a code snapshot (`workdir` as above): the refusal when the entrypoint runs its script as the
// program itself ("./train.py", [scripts/run.sh]) and the snapshot's file is not executable by its
// owner: every trial would fail with the shell's "Permission denied" (exit 126). The fix: run it
// with its interpreter, or make it executable (git keeps the bit). nullopt otherwise, also for a
// script run after an interpreter, which needs no bit.
std::optional<std::string> script_not_executable_in_snapshot(const config::Experiment& experiment,
                                                             const std::string& workdir, const SnapshotModeOf& mode_of);

// Without a snapshot: the same as a note, for the file in `start_dir` now.
std::optional<std::string> script_not_executable_in(const config::Experiment& experiment,
                                                    const std::filesystem::path& start_dir);

}  // namespace dlx::spank
