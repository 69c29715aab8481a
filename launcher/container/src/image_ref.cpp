// SPDX-License-Identifier: Apache-2.0
#include "dlx/container/image_ref.hpp"

#include <array>
#include <cstring>
#include <fstream>

namespace dlx::container {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// A SIF file starts with a launch script line, then "SIF_MAGIC" at byte 32 (the SIF header's
// magic field); a squashfs with "hsqs".
ImageRef::Kind file_kind_by_content(const std::filesystem::path& path, ImageRef::Kind by_name) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 48> head{};
  if (!in.read(head.data(), head.size()) && in.gcount() < 4) return by_name;
  if (std::memcmp(head.data(), "hsqs", 4) == 0) return ImageRef::Kind::squashfs;
  if (in.gcount() >= 41 && std::memcmp(head.data() + 32, "SIF_MAGIC", 9) == 0) return ImageRef::Kind::sif;
  return by_name;
}

}  // namespace

std::filesystem::path ImageRef::rootfs() const {
  std::error_code absent;
  if (std::filesystem::is_directory(path / "rootfs", absent)) return path / "rootfs";
  return path;
}

ImageRef classify_image(std::string_view text) {
  ImageRef ref;
  ref.text = std::string(text);
  if (starts_with(text, "docker://")) {
    ref.kind = ImageRef::Kind::registry;
    ref.registry_name = std::string(text.substr(9));
    return ref;
  }
  if (starts_with(text, "oci-archive:")) {
    ref.kind = ImageRef::Kind::oci_archive;
    ref.path = std::string(text.substr(12));
    return ref;
  }
  if (starts_with(text, "oci:")) {
    ref.kind = ImageRef::Kind::oci_layout;
    ref.path = std::string(text.substr(4));
    return ref;
  }
  if (!starts_with(text, "/")) {  // a bare name[:tag]: the registry's
    ref.kind = ImageRef::Kind::registry;
    ref.registry_name = std::string(text);
    return ref;
  }
  ref.path = std::string(text);
  std::error_code absent;
  if (std::filesystem::is_directory(ref.path, absent)) {
    const bool layout = std::filesystem::exists(ref.path / "oci-layout", absent) &&
                        std::filesystem::exists(ref.path / "index.json", absent);
    ref.kind = layout ? ImageRef::Kind::oci_layout : ImageRef::Kind::rootfs;
    return ref;
  }
  ImageRef::Kind by_name = ImageRef::Kind::sif;
  if (ends_with(text, ".sqsh") || ends_with(text, ".squashfs") || ends_with(text, ".sqfs")) {
    by_name = ImageRef::Kind::squashfs;
  } else if (ends_with(text, ".tar")) {
    by_name = ImageRef::Kind::oci_archive;
  } else if (ends_with(text, "/")) {
    by_name = ImageRef::Kind::rootfs;
  }
  ref.kind = file_kind_by_content(ref.path, by_name);
  return ref;
}

const char* to_string(ImageRef::Kind kind) {
  switch (kind) {
    case ImageRef::Kind::sif: return "a SIF image";
    case ImageRef::Kind::squashfs: return "a squashfs image";
    case ImageRef::Kind::oci_archive: return "an OCI archive";
    case ImageRef::Kind::oci_layout: return "an OCI layout";
    case ImageRef::Kind::rootfs: return "a root file system directory";
    case ImageRef::Kind::registry: return "a registry reference";
  }
  return "an image";
}

}  // namespace dlx::container
