// SPDX-License-Identifier: Apache-2.0
// The container a trial runs in (docs/containers.md): dlx's `container:` section, Determined's
// `environment.image` / `environment.force_pull_image` / top-level `bind_mounts` mapped onto it,
// and the site's `container:` defaults (runtime, image_cache, default_image).
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "dlx/config/display_text.hpp"
#include "parse_sections.hpp"

namespace dlx::config {

std::optional<std::string> ContainerConfig::image_for(bool gpus) const {
  if (image) return image;
  if (gpus && image_cuda) return image_cuda;
  if (!gpus && image_cpu) return image_cpu;
  if (image_cuda || image_cpu) return image_cuda ? image_cuda : image_cpu;  // the one given
  return default_image;
}

namespace detail {

namespace {

constexpr const char* kImageFix =
    "e.g. image: /shared/images/pytorch.sif, image: docker://nvcr.io/nvidia/pytorch:24.05-py3 "
    "or image: oci-archive:/shared/images/trainer.tar";
constexpr const char* kBindMountFix =
    "e.g. bind_mounts: [{host_path: /datasets, container_path: /datasets, read_only: true}]";

// An image reference: a registry reference, a transport:path, or a file (absolute, or relative
// to the experiment file: sbatch makes it absolute). Credentials never belong in it.
std::string read_image_ref(const MappingReader& section, const YAML::Node& value, const std::string& key) {
  if (!value.IsScalar() || value.Scalar().empty()) {
    section.fail(value, key, "must be an image reference", kImageFix);
  }
  const std::string& ref = value.Scalar();
  if (printable(ref) != ref || ref.find_first_of(" \t") != std::string::npos) {
    section.fail(value, key, fmt::format("'{}' holds a space or a control character", abbreviated(ref)), kImageFix);
  }
  if (ref.front() == '~') {
    section.fail(value, key, fmt::format("'{}': '~' is not expanded", abbreviated(ref)),
                 "write the absolute path, or one relative to the experiment file");
  }
  // docker://user:password@host/... : a password in the experiment would be frozen into its
  // directory and shown by `dlx status`.
  if (const auto scheme = ref.find("://"); scheme != std::string::npos) {
    const auto at = ref.find('@', scheme);
    const auto slash = ref.find('/', scheme + 3);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      section.fail(value, key, "holds credentials (user@ or user:password@ before the registry's host)",
                   "log in on the nodes instead (podman login, apptainer registry login, enroot's "
                   ".credentials): dlx never writes credentials into the experiment directory");
    }
  }
  return ref;
}

std::string read_absolute_path(const MappingReader& entry, const char* key, const char* what) {
  const auto path = entry.optional_string(key);
  if (!path || path->empty()) entry.missing(key, kBindMountFix);
  if (path->front() != '/') {
    entry.fail(entry.raw(key), entry.path(key), fmt::format("'{}' is not an absolute path", abbreviated(*path)),
               fmt::format("write the {} from /", what));
  }
  if (printable(*path) != *path) {
    entry.fail(entry.raw(key), entry.path(key), fmt::format("'{}' holds a control character", abbreviated(*path)),
               "rename the directory");
  }
  const auto normal = std::filesystem::path(*path).lexically_normal().string();
  return normal.size() > 1 && normal.back() == '/' ? normal.substr(0, normal.size() - 1) : normal;
}

}  // namespace

void parse_image(const MappingReader& section, ContainerConfig& into) {
  const YAML::Node value = section.raw("image");
  const std::string key = section.path("image");
  if (value.IsNull()) return;
  if (!value.IsMap()) {
    into.image = read_image_ref(section, value, key);
    return;
  }
  // Determined's per-kind images; `gpu` was its name for cuda before 0.17, rocm is AMD's.
  auto kinds = section.mapping("image");
  kinds.allow_only({"cpu", "cuda", "gpu", "rocm"});
  if (kinds.has("cuda") && kinds.has("gpu")) {
    kinds.fail(kinds.raw("gpu"), kinds.path("gpu"), "gives the CUDA image twice (gpu is the old name of cuda)",
               "keep cuda: only");
  }
  if (kinds.has("cpu")) into.image_cpu = read_image_ref(kinds, kinds.raw("cpu"), kinds.path("cpu"));
  for (const char* cuda : {"cuda", "gpu"}) {
    if (kinds.has(cuda)) into.image_cuda = read_image_ref(kinds, kinds.raw(cuda), kinds.path(cuda));
  }
  if (!into.image_cpu && !into.image_cuda) {
    section.fail(value, key, "names no cpu: or cuda: image (dlx runs no ROCm images)",
                 "e.g. image: {cpu: REF, cuda: REF}");
  }
}

void parse_bind_mounts(const MappingReader& parent, const char* key, ContainerConfig& into) {
  const YAML::Node list = parent.raw(key);
  if (list.IsNull()) return;
  if (!list.IsSequence()) parent.fail(list, parent.path(key), "must be a list of mounts", kBindMountFix);
  into.bind_mounts.clear();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto entry_path = fmt::format("{}[{}]", parent.path(key), i);
    if (!list[i].IsMap()) parent.fail(list[i], entry_path, "must be a mapping", kBindMountFix);
    const auto entry = parent.nested(list[i], entry_path);
    entry.allow_only({"host_path", "container_path", "read_only", "propagation"});
    ContainerConfig::BindMount mount;
    mount.host_path = read_absolute_path(entry, "host_path", "directory or file on the nodes");
    mount.container_path = entry.has("container_path")
                               ? read_absolute_path(entry, "container_path", "path inside the container")
                               : mount.host_path;
    mount.read_only = entry.optional_boolean("read_only").value_or(false);
    if (mount.container_path == "/") {
      entry.fail(entry.raw("container_path"), entry.path("container_path"), "would hide the whole image",
                 "mount it at a directory of its own, e.g. /data");
    }
    for (const auto& earlier : into.bind_mounts) {
      if (earlier.container_path == mount.container_path) {
        entry.fail(list[i], entry_path, fmt::format("mounts {} a second time", mount.container_path),
                   "give each mount a container_path of its own");
      }
    }
    into.bind_mounts.push_back(std::move(mount));
  }
}

void parse_container(const MappingReader& section, ContainerConfig& into, ContainerKeys keys) {
  if (keys == ContainerKeys::site) {
    section.allow_only({"runtime", "image_cache", "default_image"});
  } else {
    section.allow_only({"image", "force_pull_image", "bind_mounts", "runtime", "image_cache", "default_image"});
  }
  if (auto runtime = section.optional_choice(
          "runtime", std::vector<std::string>(std::begin(kContainerRuntimes), std::end(kContainerRuntimes)))) {
    into.runtime = *runtime;
  }
  if (section.has("image_cache")) {
    into.image_cache = read_absolute_path(section, "image_cache", "shared directory every node reaches");
  }
  if (section.has("default_image")) {
    into.default_image = read_image_ref(section, section.raw("default_image"), section.path("default_image"));
  }
  if (keys == ContainerKeys::site) return;
  if (section.has("image")) parse_image(section, into);
  if (auto force = section.optional_boolean("force_pull_image")) into.force_pull = *force;
  if (section.has("bind_mounts")) parse_bind_mounts(section, "bind_mounts", into);
}

void emit_container(YAML::Emitter& out, const ContainerConfig& container) {
  const bool site_default = container.runtime == "auto" && !container.image_cache && !container.default_image;
  const bool experiment_default = !container.image && !container.image_cpu && !container.image_cuda &&
                                  !container.force_pull && container.bind_mounts.empty();
  if (site_default && experiment_default) return;
  out << YAML::Key << "container" << YAML::Value << YAML::BeginMap;
  if (container.image) out << YAML::Key << "image" << YAML::Value << YAML::DoubleQuoted << *container.image;
  if (container.image_cpu || container.image_cuda) {
    out << YAML::Key << "image" << YAML::Value << YAML::BeginMap;
    if (container.image_cpu) out << YAML::Key << "cpu" << YAML::Value << YAML::DoubleQuoted << *container.image_cpu;
    if (container.image_cuda) out << YAML::Key << "cuda" << YAML::Value << YAML::DoubleQuoted << *container.image_cuda;
    out << YAML::EndMap;
  }
  out << YAML::Key << "force_pull_image" << YAML::Value << container.force_pull;
  if (!container.bind_mounts.empty()) {
    out << YAML::Key << "bind_mounts" << YAML::Value << YAML::BeginSeq;
    for (const auto& mount : container.bind_mounts) {
      out << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "host_path" << YAML::Value << YAML::DoubleQuoted << mount.host_path;
      out << YAML::Key << "container_path" << YAML::Value << YAML::DoubleQuoted << mount.container_path;
      out << YAML::Key << "read_only" << YAML::Value << mount.read_only;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "runtime" << YAML::Value << container.runtime;
  if (container.image_cache) out << YAML::Key << "image_cache" << YAML::Value << YAML::DoubleQuoted << *container.image_cache;
  if (container.default_image) {
    out << YAML::Key << "default_image" << YAML::Value << YAML::DoubleQuoted << *container.default_image;
  }
  out << YAML::EndMap;
}

}  // namespace detail
}  // namespace dlx::config
