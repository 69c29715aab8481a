// SPDX-License-Identifier: Apache-2.0
#include "dlx/container/rootfs_skeleton.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "dlx/container/runtime.hpp"

namespace dlx::container {

namespace fs = std::filesystem;

namespace {

// `path` relative to `/`, as components.
std::vector<std::string> components(const fs::path& path) {
  std::vector<std::string> parts;
  for (const auto& part : path.relative_path()) {
    if (!part.empty() && part != ".") parts.push_back(part.string());
  }
  return parts;
}

// The mount points below one directory of the container, by the next component of their path.
struct Level {
  std::set<std::string> on_path;  // a component some mount point lies below
  std::set<std::string> exact;    // a component that is itself a mount point
};

Level level_of(const std::vector<SkeletonPoint>& points, const std::vector<std::string>& prefix) {
  Level level;
  for (const auto& point : points) {
    const auto parts = components(point.destination);
    if (parts.size() <= prefix.size() || !std::equal(prefix.begin(), prefix.end(), parts.begin())) continue;
    const auto& next = parts[prefix.size()];
    if (parts.size() == prefix.size() + 1) {
      level.exact.insert(next);
    } else {
      level.on_path.insert(next);
    }
  }
  return level;
}

void make_directory(const fs::path& path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) throw ContainerError(fmt::format("cannot make the mount point {}: {}", path.string(), error.message()));
}

void make_file(const fs::path& path) {
  make_directory(path.parent_path());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw ContainerError(fmt::format("cannot make the mount point {}", path.string()));
  ::close(fd);
}

// One directory of the container (`prefix`, e.g. {"etc"}): the image's `image_dir` into the
// user's `skeleton_dir`.
void build_level(const fs::path& image_dir, const fs::path& skeleton_dir, const std::vector<std::string>& prefix,
                 const std::vector<SkeletonPoint>& points, std::vector<Mount>& binds) {
  fs::path container_dir = "/";
  for (const auto& part : prefix) container_dir /= part;
  const Level level = level_of(points, prefix);
  std::error_code error;
  for (fs::directory_iterator it(image_dir, error), end; !error && it != end; it.increment(error)) {
    const auto name = it->path().filename().string();
    const auto inside = skeleton_dir / name;
    if (level.exact.count(name) || level.on_path.count(name)) continue;  // made below
    const auto status = it->symlink_status();
    if (fs::is_symlink(status)) {
      std::error_code link_error;
      fs::create_symlink(fs::read_symlink(it->path(), link_error), inside, link_error);
      if (link_error) throw ContainerError(fmt::format("cannot copy the link {}: {}", it->path().string(), link_error.message()));
    } else if (fs::is_directory(status)) {
      make_directory(inside);
      binds.push_back({it->path(), container_dir / name, true});
    } else if (fs::is_regular_file(status)) {
      make_file(inside);
      binds.push_back({it->path(), container_dir / name, true});
    }  // sockets, devices, fifos of an image's root are not the trainer's
  }
  if (error) throw ContainerError(fmt::format("cannot read the image's {}: {}", image_dir.string(), error.message()));
  for (const auto& name : level.on_path) {
    make_directory(skeleton_dir / name);
    auto next = prefix;
    next.push_back(name);
    std::error_code is_dir_error;
    if (fs::is_directory(image_dir / name, is_dir_error) && !fs::is_symlink(fs::symlink_status(image_dir / name))) {
      build_level(image_dir / name, skeleton_dir / name, next, points, binds);
    } else {
      // Not in the image (or not a directory there): only the mount points below it.
      for (const auto& point : points) {
        const auto parts = components(point.destination);
        if (parts.size() > next.size() && std::equal(next.begin(), next.end(), parts.begin())) {
          fs::path below = skeleton_dir / name;
          for (std::size_t k = next.size(); k < parts.size(); ++k) below /= parts[k];
          point.is_file ? make_file(below) : make_directory(below);
        }
      }
    }
  }
  for (const auto& point : points) {
    const auto parts = components(point.destination);
    if (parts.size() == prefix.size() + 1 && std::equal(prefix.begin(), prefix.end(), parts.begin())) {
      point.is_file ? make_file(skeleton_dir / parts.back()) : make_directory(skeleton_dir / parts.back());
    }
  }
}

}  // namespace

std::vector<Mount> build_rootfs_skeleton(const fs::path& image_root, const fs::path& skeleton,
                                         const std::vector<SkeletonPoint>& destinations) {
  std::error_code error;
  if (!fs::is_directory(image_root, error)) {
    throw ContainerError(fmt::format("the image's root file system {} is not a directory", image_root.string()));
  }
  std::vector<Mount> binds;
  build_level(image_root, skeleton, {}, destinations, binds);
  return binds;
}

}  // namespace dlx::container
