// SPDX-License-Identifier: Apache-2.0
#pragma once
// OCI images converted once, not per trial (docs/containers.md, "The image cache"): the root file
// system an OCI layout or archive unpacks to (oci_image.hpp), kept by the image's manifest digest
// in one user's cache directory on shared storage, so that every later trial and experiment of
// theirs, on any node, starts from it. dlx-launch then copies it to each node once through the
// node-local data cache (dlx/data/stage.hpp).
//
//   <cache>/<hex>/rootfs/               a complete conversion: made aside, then renamed into place
//   <cache>/<hex>/image.json            {digest, source, seconds}: what it is, for `dlx status`
//   <cache>/<hex>.lock                  held (an OFD lock: across nodes) while one trial converts;
//                                       the others wait for it, then find <hex>/ and use it
//   <cache>/<hex>.partial-<host>-<pid>/ a conversion under way, or one that was killed: never used,
//                                       removed by the next holder of the lock
//
// One cache per user: a directory that several users wrote would let one of them plant the
// root file system another then runs (docs/security.md).
#include <cstdio>
#include <filesystem>
#include <string>

#include "dlx/container/image_ref.hpp"

namespace dlx::container {

struct CachedImage {
  std::filesystem::path dir;  // <cache>/<hex>: rootfs/ and image.json
  std::string digest;         // sha256:<hex> of the manifest
  bool converted = false;     // by this call (else found)
  double seconds = 0;         // the conversion's (0 when found)
};

// The cache entry of `image` (an OCI layout or archive), converted under the lock when missing.
// `cache_dir` is made (0700) when missing and must be the caller's own real directory. `log`
// (may be null) gets a line when this call converts. Throws ContainerError.
CachedImage cached_rootfs(const ImageRef& image, const std::filesystem::path& cache_dir, std::FILE* log);

// Removes a directory tree whose directories may be read-only (an image's 0555 ones). Never
// follows a link. Errors are ignored: what is left is retried by the next caller.
void remove_image_tree(const std::filesystem::path& dir) noexcept;

}  // namespace dlx::container
