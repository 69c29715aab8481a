// SPDX-License-Identifier: Apache-2.0
#pragma once
// An image reference as the experiment names it, sorted by what it points at: a file on the
// nodes (an Apptainer SIF, a squashfs, an OCI archive), a directory (an OCI layout, a bundle, a
// root file system), or a registry reference (docker://, or a bare name:tag). Each runtime back
// end runs some kinds and refuses the others with the conversion that would make it runnable.
#include <filesystem>
#include <string>
#include <string_view>

namespace dlx::container {

struct ImageRef {
  enum class Kind {
    sif,          // an Apptainer/Singularity image file (.sif, or the file's magic)
    squashfs,     // a squashfs file (.sqsh, .squashfs, .sqfs): enroot's, Apptainer's older
    oci_archive,  // oci-archive:/path.tar, or a .tar file
    oci_layout,   // oci:/path, or a directory with an index.json and oci-layout
    rootfs,       // a directory holding a root file system, or an OCI bundle (rootfs/ + config)
    registry,     // docker://host/name:tag, or a bare name[:tag]
  };
  Kind kind = Kind::registry;
  std::string text;             // as written
  std::filesystem::path path;   // for the file and directory kinds
  std::string registry_name;    // for registry: without docker://

  // A directory's root file system: <dir>/rootfs for a bundle, else <dir>.
  std::filesystem::path rootfs() const;
};

// Sorts `text` by its form, and a path by what is there (it is not required to exist: a
// missing file is a kind with a path that the back end's prepare() reports).
ImageRef classify_image(std::string_view text);
const char* to_string(ImageRef::Kind kind);

}  // namespace dlx::container
