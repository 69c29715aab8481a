// SPDX-License-Identifier: Apache-2.0
#pragma once
// OCI images on disk (an OCI layout directory, or an OCI archive: the same as a tar) made into a
// root file system directory that crun and Podman start from, without a registry, a daemon or an
// external tool. The image is named by its manifest's digest (index.json); every blob is checked
// against its digest before use. Layers are applied in order with their whiteouts (".wh.NAME"
// removes NAME of the layers below, ".wh..wh..opq" empties the directory): in a child process
// whose working directory is the root file system, with relative names only, nothing written or
// removed through a link the image made, no device files, no set-uid bits.
#include <filesystem>
#include <string>

#include "dlx/container/image_ref.hpp"

namespace dlx::container {

// "sha256:<hex>" of the image's manifest (the only one, or the one for linux/amd64). Throws
// ContainerError naming the image and what is wrong (no index.json, no manifest).
std::string oci_manifest_digest(const ImageRef& image);

// Unpacks the image into `rootfs` (an empty directory of the caller's); `scratch` (another, empty)
// receives an archive's blobs while it runs. Throws ContainerError.
void unpack_oci_image(const ImageRef& image, const std::filesystem::path& rootfs, const std::filesystem::path& scratch);

}  // namespace dlx::container
