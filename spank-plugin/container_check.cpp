// SPDX-License-Identifier: Apache-2.0
#include "container_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "dlx/container/image_ref.hpp"

namespace dlx::spank {

namespace fs = std::filesystem;

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// A reference written as a relative path: ./x, ../x, or a file name with an image's extension.
bool relative_path(std::string_view ref) {
  if (ref.starts_with("./") || ref.starts_with("../")) return true;
  if (ref.find("://") != std::string_view::npos || ref.starts_with("/")) return false;
  for (const char* extension : {".sif", ".sqsh", ".squashfs", ".sqfs", ".tar"}) {
    if (ends_with(ref, extension)) return true;
  }
  return false;
}

// `path` inside the root file system `root`: links followed within it (an absolute link target
// is the image's, not the host's), at most 40 of them.
bool exists_in_image(const fs::path& root, fs::path path) {
  for (int links = 0; links < 40; ++links) {
    const auto host = root / path.relative_path();
    std::error_code error;
    const auto status = fs::symlink_status(host, error);
    if (error || !fs::exists(status)) return false;
    if (!fs::is_symlink(status)) return ::access(host.c_str(), X_OK) == 0;
    const auto target = fs::read_symlink(host, error);
    if (error) return false;
    path = target.is_absolute() ? target : (path.parent_path() / target).lexically_normal();
  }
  return false;
}

// The program the trials start, as the image would find it (the container's PATH).
void check_entrypoint_in(const fs::path& root, const config::Experiment& experiment, const std::string& key) {
  if (experiment.entrypoint.empty()) return;
  const std::string program = experiment.entrypoint_is_shell ? "/bin/sh" : experiment.entrypoint.front();
  if (program.find('/') != std::string::npos && !program.starts_with("/")) return;  // in the code copy
  if (program.starts_with("/")) {
    if (exists_in_image(root, program)) return;
  } else {
    for (const char* dir : {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
      if (exists_in_image(root, fs::path(dir) / program)) return;
    }
  }
  throw ContainerCheckError(fmt::format("{}: the image {} has no {} to run the entrypoint with (install it in the "
                                        "image, or name the program the image has)", key, root.string(), program));
}

void check_image(std::string& ref, const config::Experiment& experiment, const fs::path& experiment_dir,
                 const std::string& key) {
  if (relative_path(ref)) ref = (experiment_dir / ref).lexically_normal().string();
  const auto image = container::classify_image(ref);
  if (image.path.empty()) return;  // a registry reference: the node pulls it
  struct stat status {};
  if (::stat(image.path.c_str(), &status) != 0) {
    throw ContainerCheckError(fmt::format("{}: {} does not exist (check the path; every node must see the image at "
                                          "this path)", key, image.path.string()));
  }
  if (::access(image.path.c_str(), R_OK) != 0) {
    throw ContainerCheckError(fmt::format("{}: you cannot read {} (trials run the image as you: ask its owner to "
                                          "make it readable)", key, image.path.string()));
  }
  if (image.kind == container::ImageRef::Kind::rootfs) check_entrypoint_in(image.rootfs(), experiment, key);
}

}  // namespace

void check_container(config::Experiment& experiment) {
  auto& container = experiment.container;
  const fs::path experiment_dir = fs::absolute(fs::path(experiment.source_file)).parent_path();
  if (container.image) check_image(*container.image, experiment, experiment_dir, "container.image");
  if (container.image_cpu) check_image(*container.image_cpu, experiment, experiment_dir, "container.image.cpu");
  if (container.image_cuda) check_image(*container.image_cuda, experiment, experiment_dir, "container.image.cuda");
  if (!container.image && !container.image_cpu && !container.image_cuda && container.default_image) {
    check_image(*container.default_image, experiment, experiment_dir, "the site's container.default_image");
  }
}

}  // namespace dlx::spank
