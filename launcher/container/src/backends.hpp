// SPDX-License-Identifier: Apache-2.0
#pragma once
// The runtime back ends (runtime.hpp lists what each runs) and what they share.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dlx/common/file_lock.hpp"
#include "dlx/container/runtime.hpp"

namespace dlx::container::detail {

std::unique_ptr<Runtime> make_apptainer();
std::unique_ptr<Runtime> make_podman();
std::unique_ptr<Runtime> make_enroot();
std::unique_ptr<Runtime> make_oci();

// The runtime's version command (`podman --version`, `enroot version`) exits 0 within 10 s:
// nullopt, else why not.
std::optional<std::string> version_problem(const std::vector<std::string>& version_command);

// A path for a command-line mount option that splits on ':' or ',' (podman's -v, apptainer's
// --bind, enroot's --mount): refused rather than mounted somewhere else.
void check_mount_path(const std::filesystem::path& path, std::string_view runtime);

// `option SRC:DST[:ro]` for each mount (podman's --volume, apptainer's --bind), each path checked
// by check_mount_path.
void add_mount_options(std::vector<std::string>& argv, const std::vector<Mount>& mounts, std::string_view option,
                       std::string_view runtime);

// An OCI layout or archive as the containers/image transports name it: oci:PATH, oci-archive:PATH.
std::string oci_transport(const ImageRef& image);

// The device files of the trial's GPUs: /dev/nvidiaN, and the driver's control devices there are.
std::vector<std::string> gpu_device_files(const std::vector<int>& gpus);

// The lock file `path` (created 0600), open and not locked yet: its locks belong to this open
// file description (threads and processes of the node exclude each other).
FileLock open_lock(const std::filesystem::path& path);

// An exclusive lock on `path` (open_lock); waits as long as the holder takes.
FileLock lock_exclusively(const std::filesystem::path& path);

// The first 16 hex digits of the sha256 of `text`: a short name for what `text` identifies.
std::string short_sha256(std::string_view text);

// A probe container's root of the host's own (the runtimes' "can a container start here" checks):
// each of /bin, /lib, /lib64 and /sbin that is a link on the host (a merged /usr) is the same link
// in `root`; each that is a directory is a read-only bind of the host's, added to `mounts`, with
// its mount point made in `root` when `make_mount_points` (an OCI bundle needs them; Podman makes
// its own). /usr is the caller's to mount.
void mirror_host_tops(const std::filesystem::path& root, std::vector<Mount>& mounts, bool make_mount_points);

// The variables as NAME=value lines, in a new private (0600) file; its path.
std::filesystem::path write_env_file(const std::filesystem::path& state_dir,
                                     const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace dlx::container::detail
