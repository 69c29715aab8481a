// SPDX-License-Identifier: Apache-2.0
#pragma once
// What dlx-launch asks of a container runtime (docs/containers.md): run the trainer's command in
// the user's image with the trial's directories mounted at the same paths, the variables it
// passes, the trial's GPUs and the host's network. The runtime back ends (runtime.hpp) turn it
// into a command line, which dlx-launch runs as its child in place of the bare trainer, so that
// the tee, the signals, the sampler and the exit protocol stay as they are.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "dlx/common/file_lock.hpp"
#include "dlx/container/image_ref.hpp"

namespace dlx::container {

struct Mount {
  std::filesystem::path host;
  std::filesystem::path container;
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

struct ContainerRun {
  ImageRef image;
  bool force_pull = false;
  std::vector<Mount> mounts;
  // Set inside the container: NAME -> value. The back ends keep values off the command line
  // (other users read argv in /proc): in the runtime's own environment or a private file.
  std::vector<std::pair<std::string, std::string>> env;
  std::filesystem::path workdir;
  std::vector<std::string> command;
  // The GPUs the trial holds, as the node numbers them (/dev/nvidiaN); empty: none.
  std::vector<int> gpus;
  // The node's NVIDIA driver files (nvidia_driver.hpp), mounted read-only with the GPUs by a back
  // end that does not bring the driver in itself (Runtime::needs_driver_files: crun, and podman
  // without NVIDIA's CDI spec; Apptainer, Enroot and Podman's CDI devices do).
  std::vector<Mount> driver;
  // Unique on the node while it runs ("dlx-<job>-<task>-r<rank>"): the runtime's container name.
  std::string name;
  // The user's private (0700) directory for what the back end writes: an OCI bundle's
  // config.json, the runtime's state, an environment file.
  std::filesystem::path state_dir;
};

// What dlx-launch execs: the runtime's command line, and variables to set in the runtime's own
// environment (never the trainer's values on the command line).
struct RuntimeCommand {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  // What the back end did to prepare the run, for the trial's log (an image unpacked, reused).
  std::vector<std::string> notes;
  // Locks the run holds until it ends (dlx-launch keeps them while the trainer runs): Enroot's
  // hold on the node's container it starts, so that no other run removes it meanwhile.
  std::vector<FileLock> held;
};

}  // namespace dlx::container
