// SPDX-License-Identifier: Apache-2.0
#pragma once
// Creating an experiment's directory on shared storage, as the submitting user (the plugin's
// allocator context, inside sbatch), and the job's link to it. Nothing another user made is
// accepted on the way (trusted_path.hpp): a <user> directory someone else created first, a
// symbolic link in its place, or one writable by others, is refused with what to do.
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace dlx::store {

// Creates <storage_root>/<user>/<name> (0750), or <name>.2, <name>.3, ... when taken, atomically
// with mkdir so that two submissions of the same experiment never share a directory, and
// trials/ (0750) inside; creates <storage_root>/<user> (0750) first if needed. The storage root
// must be trusted (owned by root or `owner`; shared only with the sticky bit) and <user> must be
// owner's own directory, not writable by group or others. Returns the directory created. Throws
// UntrustedPathError or SystemError naming the path.
std::filesystem::path create_experiment_dir(const std::filesystem::path& storage_root, const std::string& user,
                                            uid_t owner, const std::string& name);

// Makes <user_root>/.jobs/<job_id> -> experiment_dir (idempotent; an existing link is left
// alone), where <user_root> is the experiment directory's parent, checked as owner's own.
void link_job(const std::filesystem::path& experiment_dir, const std::string& job_id, uid_t owner);

}  // namespace dlx::store
