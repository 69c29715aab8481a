// SPDX-License-Identifier: Apache-2.0
#pragma once
// Destructive commands (dlx ckpt gc) act on an experiment with its owner's rights and no more.
// The experiment directory must be its owner's own by trusted_path.hpp's rule: a real directory
// owned by them and writable by nobody else, under directories only root or they can change, so
// no symbolic link or directory another user made can steer the command elsewhere. Run by an
// ordinary user, the owner must be that user. Run by root, the command takes on the owner's uid,
// gid and groups before it touches anything (root's own experiments stay root's): the kernel
// then refuses whatever the owner could not delete themselves.
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace dlx::cli {

// Checks `experiment_dir` and, as root, drops to its owner for the rest of the process. Returns
// the name of the user the command now runs as. Throws UntrustedPathError or SystemError.
std::string act_as_experiment_owner(const std::filesystem::path& experiment_dir);

// As root, takes on `uid`'s user, primary group and groups for the rest of the process (nothing
// to do for uid 0 or when not root). For readers that must open a file with its owner's rights
// only (dlx logs on Slurm's output file). Throws SystemError or Error.
void act_as_user(uid_t uid);

}  // namespace dlx::cli
