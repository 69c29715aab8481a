// SPDX-License-Identifier: Apache-2.0
#pragma once
// The frozen experiment.yaml that a trial acts on (its entrypoint is what dlx-launch runs), read
// only once the experiment directory is shown to be this process's user's own: every directory
// from / down trusted, the experiment directory and the snapshot owned by the user and writable by
// nobody else, the snapshot a regular file opened without following a link or blocking
// (store/trusted_experiment.hpp, docs/security.md). Another user's directory put in place of the
// user's is refused before anything in it is read.
#include <filesystem>

#include "dlx/config/experiment.hpp"

namespace dlx::env {

// Throws UntrustedPathError (the path, who could change it, the fix), SystemError, or
// config::ConfigError for a snapshot that does not parse.
config::Experiment load_trusted_snapshot(const std::filesystem::path& experiment_dir);

}  // namespace dlx::env
