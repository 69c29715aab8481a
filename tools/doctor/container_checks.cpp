// SPDX-License-Identifier: Apache-2.0
#include "container_checks.hpp"

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

}  // namespace dlx::doctor
