// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator's look at the experiment's container image before anything is queued: an image
// that is a file or directory on the nodes (named absolute, or relative to the experiment file:
// made absolute here and frozen so) must exist and be readable by the submitting user (sbatch
// runs as them), and a root file system directory must hold the entrypoint's program. What
// sbatch cannot know (a registry reference, a SIF's contents, the runtimes of the nodes) is left
// to dlx-launch, which says it in the trial's log.
#include "dlx/common/error.hpp"
#include "dlx/config/experiment.hpp"

namespace dlx::spank {

class ContainerCheckError : public Error {
 public:
  using Error::Error;
};

// Throws ContainerCheckError naming the key, the path and the fix.
void check_container(config::Experiment& experiment);

}  // namespace dlx::spank
