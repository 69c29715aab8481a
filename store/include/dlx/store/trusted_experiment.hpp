// SPDX-License-Identifier: Apache-2.0
#pragma once
// An existing experiment directory, used only once it is shown to be its owner's alone
// (trusted_path.hpp): what slurmstepd (the plugin's remote context) and dlx-launch check before
// they act on the frozen snapshot, whose entrypoint they run as the job's user.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace dlx::store {

// The file `name` of `experiment_dir`, read as owner's own: every directory from / down trusted,
// the experiment directory owner's and not writable by group or others, the file a regular file
// of owner's, not writable by others, opened without following a link or blocking (a FIFO is
// refused at once), at most `max_bytes`. Throws UntrustedPathError, SystemError or Error.
std::string read_trusted_experiment_file(const std::filesystem::path& experiment_dir, const std::string& name,
                                         uid_t owner, std::size_t max_bytes);

// Makes trials/<trial_id>/checkpoints/ inside the trusted experiment directory, each missing
// directory with mode 0750 exactly, each existing one checked as owner's own. Returns its path.
std::filesystem::path make_checkpoint_dir(const std::filesystem::path& experiment_dir, int trial_id, uid_t owner);

}  // namespace dlx::store
