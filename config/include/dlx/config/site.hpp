// SPDX-License-Identifier: Apache-2.0
#pragma once
// Site defaults: a YAML file the administrator names in plugstack.conf (site_config=FILE).
//
//   defaults:                    # same keys and rules as in an experiment file
//     resources: {partition: gpu, time_limit: "1-00:00:00"}
//     checkpoint: {keep_latest: 2}
//     environment: {NCCL_SOCKET_IFNAME: ib0}
//     max_restarts: 3
//     code: {max_size: 100MB, run_from: node_local, keep_outputs: 1GB}   # the code snapshot's cap, where trials run it, what is kept
//     data: {to: /local/%u, checksum: false}   # where trials stage `data:` on a node
//   limits:
//     max_trials: 500           # a cap on trials per experiment
//     mps: true                 # experiments may ask for CUDA MPS (resources.mps; default false)
//     data: {max_bytes: 100GB, high_watermark: 0.9, low_watermark: 0.8}   # one user's node cache
//   container:                   # docs/containers.md
//     runtime: apptainer         # apptainer | podman | enroot | crun | auto (the first that works)
//     image_cache: /shared/dlx-images   # converted images, by digest, on shared storage
//     default_image: /shared/images/pytorch.sif   # for experiments that name none
//
// Precedence: sbatch command line and #SBATCH > experiment file > site defaults > Slurm's own.
// The merged values are frozen into the experiment's snapshot.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dlx/config/experiment.hpp"

namespace dlx::config {

struct SiteConfig {
  std::string source;  // the file, for messages
  Resources resources;
  CheckpointPolicy checkpoint;
  std::vector<std::pair<std::string, std::string>> environment;
  int max_restarts = 5;
  CodeConfig code;
  ContainerConfig container;      // container: runtime, image_cache, default_image
  DataConfig data;                // defaults.data (to, checksum) and limits.data (the cache's)
  std::optional<int> max_trials;  // limits.max_trials
  bool allow_mps = false;         // limits.mps
};

SiteConfig parse_site_config(std::string_view text, const std::string& file_label);
SiteConfig parse_site_config_file(const std::filesystem::path& path);

// What the experiment asks that only the site may grant (today: resources.mps, which needs the
// site file's limits: {mps: true}); `site` is null where the plugin has no site file. Throws
// ConfigError naming the key, the site file and what to do.
void check_site_allows(const Experiment& experiment, const SiteConfig* site);

}  // namespace dlx::config
