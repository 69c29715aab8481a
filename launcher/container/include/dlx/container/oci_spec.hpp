// SPDX-License-Identifier: Apache-2.0
#pragma once
// The OCI runtime spec (config.json) dlx writes for the crun back end: the trainer's command,
// variables and working directory; a read-only root (the user's skeleton of the image,
// rootfs_skeleton.hpp); the image's binds, then the kernel's file systems, then the trial's
// mounts at their own paths; only the mount namespace and, when not root, a user namespace that
// maps the user to root inside (rootless runtimes need a mapped root; the trainer's files stay
// the user's), so that network, PIDs and IPC are the host's. No capabilities, no new privileges.
#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "dlx/container/container_run.hpp"

namespace dlx::container {

struct OciIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
};

nlohmann::json oci_spec(const ContainerRun& run, const std::filesystem::path& skeleton,
                        const std::vector<Mount>& image_binds, OciIdentity who,
                        const std::vector<std::string>& gpu_devices);

}  // namespace dlx::container
