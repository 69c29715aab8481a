// SPDX-License-Identifier: Apache-2.0
#pragma once
// The root an OCI runtime starts the trainer in, when the image is a root file system shared by
// every user of the node (read-only to them) and the trial's directories must be mounted at
// their own paths, which the image does not have:
//
//   skeleton/            the user's own directory (the bundle's root, made read-only by the runtime)
//     usr/  <- bind, read-only, of image/usr        an image entry on no mount's path: bound whole
//     bin -> usr/bin                                 a symbolic link: the same link
//     etc/                                           on a mount's path (/etc/hosts): mirrored, one
//       hosts      (a mount point)                   level further, its other entries bound
//       passwd <- bind of image/etc/passwd
//     work/exp/    (a mount point)                   not in the image: made
//
// So that the mount points exist without writing into the image, and without copying it.
#include <filesystem>
#include <vector>

#include "dlx/container/container_run.hpp"

namespace dlx::container {

// Builds `skeleton` (an empty directory of the caller's) for `image_root` and the mount points
// `destinations` (absolute, normalised; each made a directory, or a file when its source is
// one); returns the image's binds into it, in the order they must be mounted (parents first).
// Throws ContainerError when the image root is no directory or an entry cannot be made.
struct SkeletonPoint {
  std::filesystem::path destination;
  bool is_file = false;
};
std::vector<Mount> build_rootfs_skeleton(const std::filesystem::path& image_root,
                                         const std::filesystem::path& skeleton,
                                         const std::vector<SkeletonPoint>& destinations);

}  // namespace dlx::container
