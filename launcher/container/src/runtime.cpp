// SPDX-License-Identifier: Apache-2.0
#include "dlx/container/runtime.hpp"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "backends.hpp"

namespace dlx::container {

void Runtime::cleanup(const ContainerRun&) const noexcept {}

std::optional<std::string> find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const auto colon = dirs.find(':');
    const auto dir = dirs.substr(0, colon);
    if (!dir.empty()) {
      const auto candidate = fmt::format("{}/{}", dir, name);
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

std::unique_ptr<Runtime> make_runtime(std::string_view name) {
  if (name == "apptainer") return detail::make_apptainer();
  if (name == "podman") return detail::make_podman();
  if (name == "enroot") return detail::make_enroot();
  if (name == "crun") return detail::make_oci();
  throw ContainerError(fmt::format("unknown container runtime '{}' (apptainer, podman, enroot, crun or auto)", name));
}

std::unique_ptr<Runtime> choose_runtime(std::string_view configured, const ImageRef& image) {
  if (configured != "auto") {
    auto runtime = make_runtime(configured);
    if (auto why = runtime->unavailable(false)) {
      throw ContainerError(fmt::format("the site's container runtime {} cannot run here: {} (ask your administrator; "
                                       "`dlx doctor` on a node says which runtimes work)", configured, *why));
    }
    if (auto why = runtime->refuses(image)) {
      throw ContainerError(fmt::format("the site's container runtime {} cannot run {}: {}", configured, image.text, *why));
    }
    return runtime;
  }
  std::vector<std::string> tried;
  for (const auto name : kAutoOrder) {
    auto runtime = make_runtime(name);
    if (auto why = runtime->refuses(image)) {
      tried.push_back(fmt::format("{}: {}", name, *why));
      continue;
    }
    if (auto why = runtime->unavailable(false)) {
      tried.push_back(fmt::format("{}: {}", name, *why));
      continue;
    }
    return runtime;
  }
  throw ContainerError(fmt::format("no container runtime on this node runs {} ({}) ({}; `dlx doctor` on a node says "
                                   "which runtimes work)", image.text, to_string(image.kind), fmt::join(tried, "; ")));
}

}  // namespace dlx::container
