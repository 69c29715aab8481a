// SPDX-License-Identifier: Apache-2.0
#include "dlx/env/trusted_snapshot.hpp"

#include <unistd.h>

#include "dlx/config/parse.hpp"
#include "dlx/store/trusted_experiment.hpp"

namespace dlx::env {

namespace {
constexpr std::size_t kMaxSnapshotBytes = 1 << 20;  // the experiment file's own limit
}  // namespace

config::Experiment load_trusted_snapshot(const std::filesystem::path& experiment_dir) {
  const auto text =
      store::read_trusted_experiment_file(experiment_dir, config::kSnapshotFileName, ::geteuid(), kMaxSnapshotBytes);
  return config::parse_experiment(text, (experiment_dir / config::kSnapshotFileName).string());
}

}  // namespace dlx::env
