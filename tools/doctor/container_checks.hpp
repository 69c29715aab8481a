// SPDX-License-Identifier: Apache-2.0
#pragma once
// `dlx doctor`'s look at the container runtimes of the host it runs on (docs/containers.md): which
// of apptainer, podman, enroot and crun (an OCI runtime: crun or runc) start a container here, as
// the user who asks. Runtimes matter on the compute nodes: `srun -N1 dlx doctor --containers`
// asks one.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "site_checks.hpp"

namespace dlx::doctor {

// Why `runtime` cannot run containers here (nullopt: it can; "not installed" when absent).
using RuntimeProbe = std::function<std::optional<std::string>(std::string_view runtime)>;

// One finding per runtime (ok, skipped when not installed, warn when installed but failing) and a
// warning when none works.
std::vector<Finding> check_container_runtimes(const RuntimeProbe& probe);

// The libdlx_c dlx-launch mounts into containers at /dlx/lib (launch::dlx_library_file, beside
// this dlx; `portable`: launch::is_portable_library): the portable one (<libdir>/dlx/container/,
// scripts/portable-c.sh) loads in images of any distribution with glibc 2.28 or later, dlx's own
// build only in images that have its libraries (a warning, with how to install the portable
// one); none is a warning too.
Finding check_container_sdk(const std::optional<std::filesystem::path>& library, bool portable);

// What containers with GPUs of the runtimes that take the driver from dlx (`runtimes`, named:
// those of Runtime::needs_driver_files that run here) get of this node's NVIDIA driver
// (container::find_driver_files: `driver`, as host path -> container path): skipped without
// NVIDIA devices (`gpus_here`), ok naming the libraries, a warning when the node's loader cache
// knows no libcuda.so.1.
Finding check_container_driver(bool gpus_here, const std::vector<std::string>& runtimes,
                               const std::vector<std::pair<std::filesystem::path, std::filesystem::path>>& driver);

}  // namespace dlx::doctor
