// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator's check of the experiment's `data: stage:` (dlx::data does the walking): every
// path exists and is readable by the submitting user, and the datasets together fit the cache's
// cap. Done before the experiment directory exists, so that a failure queues nothing and leaves
// nothing behind, and bounded in time (a walk of a huge tree on a slow file system must not hang
// sbatch).
#include <chrono>
#include <cstdint>

#include "dlx/common/error.hpp"
#include "dlx/config/experiment.hpp"

namespace dlx::spank {

// A data: problem found at submission; the message names the path (or the sizes) and the fix.
class DataCheckError : public Error {
 public:
  using Error::Error;
};

// Resolves relative stage: paths against the experiment file's directory and stores them back,
// absolute and normalised, into `experiment` (the frozen config names them; trials may start
// elsewhere). Returns the datasets' total size. Throws DataCheckError.
std::uint64_t check_data(config::Experiment& experiment,
                         std::chrono::milliseconds time_limit = std::chrono::seconds(30));

}  // namespace dlx::spank
