// SPDX-License-Identifier: Apache-2.0
#include "container_checks.hpp"

#include <string_view>

#include <fmt/format.h>

namespace dlx::doctor {

std::vector<Finding> check_container_runtimes(const RuntimeProbe& probe) {
  std::vector<Finding> findings;
  bool any = false;
  for (const char* runtime : {"apptainer", "podman", "enroot", "crun"}) {
    const auto problem = probe(runtime);
    const auto check = fmt::format("container runtime {}", runtime);
    if (!problem) {
      any = true;
      findings.push_back({Verdict::ok, check, "starts containers here", ""});
    } else if (problem->find("not installed") != std::string::npos) {
      findings.push_back({Verdict::skipped, check, *problem, ""});
    } else if (std::string_view(runtime) == "podman" &&
               problem->find("cgroups in hybrid mode not supported") != std::string::npos) {
      // crun, Podman's default OCI runtime, refuses rootless containers where the cgroups are
      // a v1/v2 hybrid; runc with Podman's own cgroupfs manager runs them.
      findings.push_back({Verdict::warn, check, fmt::format("installed, but {}", *problem),
                          "trials in Podman fail on such a node: this host's cgroups are a v1/v2 hybrid, which "
                          "crun refuses to rootless containers; set runtime = \"runc\" and cgroup_manager = "
                          "\"cgroupfs\" under [engine] in /etc/containers/containers.conf (with runc installed; "
                          "docs/admin-guide.md, Containers)"});
    } else {
      findings.push_back({Verdict::warn, check, fmt::format("installed, but {}", *problem),
                          "trials that name an image and this runtime fail on such a node: fix the runtime's "
                          "setup for unprivileged users (docs/admin-guide.md, Containers), or name another in the "
                          "site file's container: runtime"});
    }
  }
  if (!any) {
    findings.push_back({Verdict::warn, "container runtimes", "none starts a container on this host",
                        "experiments that name an image (container: image / environment: image) fail on such a "
                        "node; install one (docs/admin-guide.md, Containers), or ignore this where no one asks"});
  }
  return findings;
}

Finding check_container_sdk(const std::optional<std::filesystem::path>& library, bool portable) {
  const char* check = "the dlx SDK in containers";
  if (!library) {
    return {Verdict::warn, check, "no libdlx_c.so.0 beside this dlx: `import dlx` in a container finds no library",
            "install dlx's C library (the Debian package libdlx-c0, or `cmake --install` of the whole build)"};
  }
  const auto dir = library->parent_path();
  if (portable) {
    return {Verdict::ok, check,
            fmt::format("containers get the portable libdlx_c {} (images with glibc 2.28 or later)", library->string()),
            ""};
  }
  return {Verdict::warn, check,
          fmt::format("containers get dlx's own libdlx_c {}, which loads only in images that have the libraries "
                      "this dlx was built with",
                      library->string()),
          fmt::format("for images of other distributions (NGC's, users' own), build the portable one "
                      "(scripts/portable-c.sh) and install it as {}/dlx/container/libdlx_c.so.0 "
                      "(docs/containers.md, \"The SDK in any image\")",
                      dir.string())};
}

Finding check_container_driver(bool gpus_here, const std::vector<std::string>& runtimes,
                               const std::vector<std::pair<std::filesystem::path, std::filesystem::path>>& driver) {
  const auto which = fmt::format("{}", fmt::join(runtimes, " and "));
  const auto check = fmt::format("the NVIDIA driver in {} containers", which);
  if (!gpus_here) return {Verdict::skipped, check, "no NVIDIA GPU on this host (/dev/nvidiactl)", ""};
  if (driver.empty()) {
    return {Verdict::warn, check,
            fmt::format("this node's loader cache (ldconfig -p) lists no libcuda.so.1: {} containers get the GPUs' "
                        "device files but no driver, and CUDA in them finds none",
                        which),
            "install the NVIDIA driver's libraries where the loader finds them (then run ldconfig), or run GPU "
            "trials with apptainer, enroot or podman with NVIDIA's CDI spec (nvidia-ctk cdi generate; "
            "docs/containers.md)"};
  }
  std::vector<std::string> names;
  for (const auto& [host, container] : driver) names.push_back(container.filename().string());
  return {Verdict::ok, check,
          fmt::format("{} containers with GPUs get {} from {} in /dlx/driver", which, fmt::join(names, " "),
                      driver.front().first.parent_path().string()),
          ""};
}

}  // namespace dlx::doctor
