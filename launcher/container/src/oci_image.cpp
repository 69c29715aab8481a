// SPDX-License-Identifier: Apache-2.0
#include "dlx/container/oci_image.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <clocale>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dlx/container/runtime.hpp"

namespace dlx::container {

namespace fs = std::filesystem;

namespace {

using Reader = std::unique_ptr<struct archive, decltype(&archive_read_free)>;
using Writer = std::unique_ptr<struct archive, decltype(&archive_write_free)>;

constexpr std::size_t kMaxJson = 4 << 20;

[[noreturn]] void refuse(const ImageRef& image, const std::string& why) {
  throw ContainerError(fmt::format("the OCI image {}: {}", image.text, why));
}

// A tar (plain, gzip or zstd) open for reading; `why` gets libarchive's reason when it is not.
Reader open_tar(const fs::path& file, std::string& why) {
  Reader in(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  archive_read_support_filter_gzip(in.get());
  archive_read_support_filter_zstd(in.get());
  archive_read_support_filter_none(in.get());
  if (archive_read_open_filename(in.get(), file.c_str(), std::size_t{1} << 20) != ARCHIVE_OK) {
    why = archive_error_string(in.get());
    return Reader(nullptr, archive_read_free);
  }
  return in;
}

Reader tar_reader(const fs::path& file) {
  std::string why;
  auto in = open_tar(file, why);
  if (!in) throw ContainerError(fmt::format("cannot read {}: {}", file.string(), why));
  return in;
}

// A blob's name in a layout: blobs/sha256/<64 hex>; anything else is refused.
std::string blob_path(const std::string& digest) {
  constexpr std::string_view prefix = "sha256:";
  if (digest.rfind(prefix, 0) != 0 || digest.size() != prefix.size() + 64 ||
      digest.find_first_not_of("0123456789abcdef", prefix.size()) != std::string::npos) {
    throw ContainerError(fmt::format("unsupported digest '{}' (dlx reads sha256 digests)", digest.substr(0, 80)));
  }
  return "blobs/sha256/" + digest.substr(prefix.size());
}

std::string read_text(const fs::path& file, std::size_t limit) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ContainerError(fmt::format("cannot open {}", file.string()));
  std::string text(limit + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > limit) throw ContainerError(fmt::format("{} is larger than {} bytes", file.string(), limit));
  return text;
}

// index.json of an OCI archive, read from the tar without unpacking it.
std::string archive_index(const ImageRef& image) {
  auto in = tar_reader(image.path);
  archive_entry* entry = nullptr;
  while (archive_read_next_header(in.get(), &entry) == ARCHIVE_OK) {
    const std::string name = archive_entry_pathname(entry);
    if (name != "index.json" && name != "./index.json") continue;
    const auto size = archive_entry_size(entry);
    if (size < 0 || static_cast<std::size_t>(size) > kMaxJson) refuse(image, "index.json is too large");
    std::string text(static_cast<std::size_t>(size), '\0');
    if (archive_read_data(in.get(), text.data(), text.size()) != static_cast<la_ssize_t>(text.size())) {
      refuse(image, "index.json could not be read");
    }
    return text;
  }
  refuse(image, "the archive holds no index.json (is it an OCI archive? `podman save --format oci-archive` makes one)");
}

std::string manifest_digest_in(const ImageRef& image, const std::string& index_text) {
  const auto index = nlohmann::json::parse(index_text, nullptr, false);
  if (!index.is_object() || !index.contains("manifests") || !index["manifests"].is_array() ||
      index["manifests"].empty()) {
    refuse(image, "index.json lists no manifest");
  }
  const auto& manifests = index["manifests"];
  if (manifests.size() == 1) return manifests[0].value("digest", "");
  for (const auto& manifest : manifests) {
    const auto platform = manifest.value("platform", nlohmann::json::object());
    if (platform.value("os", "") == "linux" && platform.value("architecture", "") == "amd64") {
      return manifest.value("digest", "");
    }
  }
  refuse(image, "index.json lists several manifests and none for linux/amd64");
}

// The sha256 of `file`, as "sha256:<hex>".
std::string sha256_of(const fs::path& file) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ContainerError(fmt::format("cannot open {}", file.string()));
  std::vector<char> buffer(std::size_t{1} << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest.data(), &length);
  std::string hex = "sha256:";
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

// The blobs of an OCI archive, written by name into `layout` (only oci-layout, index.json and
// blobs/sha256/<hex>: nothing the archive names elsewhere).
void extract_archive_blobs(const ImageRef& image, const fs::path& layout) {
  auto in = tar_reader(image.path);
  fs::create_directories(layout / "blobs" / "sha256");
  archive_entry* entry = nullptr;
  std::vector<char> buffer(std::size_t{1} << 20);
  while (archive_read_next_header(in.get(), &entry) == ARCHIVE_OK) {
    std::string name = archive_entry_pathname(entry);
    if (name.rfind("./", 0) == 0) name = name.substr(2);
    const bool wanted = name == "index.json" || name == "oci-layout" ||
                        (name.rfind("blobs/sha256/", 0) == 0 && name.size() == 13 + 64 &&
                         name.find_first_not_of("0123456789abcdef", 13) == std::string::npos);
    if (!wanted || archive_entry_filetype(entry) != AE_IFREG) continue;
    std::ofstream out(layout / name, std::ios::binary | std::ios::trunc);
    for (;;) {
      const auto got = archive_read_data(in.get(), buffer.data(), buffer.size());
      if (got < 0) refuse(image, fmt::format("{}: {}", name, archive_error_string(in.get())));
      if (got == 0) break;
      out.write(buffer.data(), got);
    }
    if (!out) refuse(image, fmt::format("cannot write {}", (layout / name).string()));
  }
}

bool stays_inside(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  for (const auto& part : fs::path(name)) {
    if (part == "..") return false;
  }
  return true;
}

// Whether every directory on the way to `name` (relative to the working directory) is a real
// directory, not a link: a whiteout never removes through a link the image made.
bool real_directories_to(const fs::path& name) {
  fs::path prefix;
  for (auto part = name.begin(); part != name.end(); ++part) {
    if (std::next(part) == name.end()) break;
    if (*part == "." || part->empty()) continue;
    prefix /= *part;
    std::error_code error;
    const auto status = fs::symlink_status(prefix, error);
    if (error || !fs::is_directory(status) || fs::is_symlink(status)) return false;
  }
  return true;
}

void apply_whiteout(const std::string& name) {
  const fs::path path = fs::path(name).lexically_normal();
  const auto base = path.filename().string();
  if (!real_directories_to(path)) return;
  std::error_code ignored;
  if (base == ".wh..wh..opq") {  // the directory's entries from the layers below are gone
    const auto dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (fs::is_symlink(fs::symlink_status(dir, ignored))) return;
    for (fs::directory_iterator it(dir, ignored), end; !ignored && it != end; it.increment(ignored)) {
      fs::remove_all(it->path(), ignored);  // remove_all does not follow a link it is given
    }
    return;
  }
  fs::remove_all(path.parent_path() / base.substr(4), ignored);
}

// In the child: every layer, in order, into the working directory (the root file system).
// Returns 0, or writes why to `report` and returns 1.
int apply_layers(const std::vector<fs::path>& layers, int report) {
  Writer out(archive_write_disk_new(), archive_write_free);
  // One writer for all layers: directory modes (0555, say) are fixed up at its close, so that a
  // later layer can still write into a directory an earlier one made read-only.
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_UNLINK |
                                                ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME);
  const auto fail = [&](const std::string& why) {
    const auto written = ::write(report, why.data(), why.size());
    (void)written;
    return 1;
  };
  for (const auto& layer : layers) {
    std::string why;
    const auto in = open_tar(layer, why);
    if (!in) return fail(fmt::format("layer {}: {}", layer.filename().string(), why));
    archive_entry* entry = nullptr;
    int status = ARCHIVE_OK;
    while ((status = archive_read_next_header(in.get(), &entry)) == ARCHIVE_OK) {
      std::string name = archive_entry_pathname(entry);
      if (name.rfind("./", 0) == 0) name = name.substr(2);
      if (name.empty() || name == ".") continue;
      if (!stays_inside(name)) return fail(fmt::format("layer {}: the entry '{}' leaves the root", layer.filename().string(), name));
      const auto base = fs::path(name).filename().string();
      if (base.rfind(".wh.", 0) == 0) {
        apply_whiteout(name);
        continue;
      }
      const auto type = archive_entry_filetype(entry);
      if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) continue;  // devices, fifos: not the trainer's
      archive_entry_set_pathname(entry, name.c_str());
      archive_entry_set_perm(entry, archive_entry_perm(entry) & 07777 & ~06000);  // no set-uid, set-gid
      if (const char* link = archive_entry_hardlink(entry)) {
        std::string target = link;
        if (target.rfind("./", 0) == 0) target = target.substr(2);
        if (!stays_inside(target)) return fail(fmt::format("layer {}: the hard link '{}' leaves the root", layer.filename().string(), name));
        archive_entry_set_hardlink(entry, target.c_str());
      }
      if (archive_write_header(out.get(), entry) != ARCHIVE_OK) {
        return fail(fmt::format("layer {}: {}: {}", layer.filename().string(), name, archive_error_string(out.get())));
      }
      if (archive_entry_size(entry) > 0 && !archive_entry_hardlink(entry)) {
        const void* block = nullptr;
        std::size_t size = 0;
        la_int64_t offset = 0;
        int data = ARCHIVE_OK;
        while ((data = archive_read_data_block(in.get(), &block, &size, &offset)) == ARCHIVE_OK) {
          if (archive_write_data_block(out.get(), block, size, offset) != ARCHIVE_OK) {
            return fail(fmt::format("layer {}: {}: {}", layer.filename().string(), name, archive_error_string(out.get())));
          }
        }
        if (data != ARCHIVE_EOF) return fail(fmt::format("layer {}: {}: {}", layer.filename().string(), name, archive_error_string(in.get())));
      }
      archive_write_finish_entry(out.get());
    }
    if (status != ARCHIVE_EOF) return fail(fmt::format("layer {}: {}", layer.filename().string(), archive_error_string(in.get())));
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) return fail(archive_error_string(out.get()));
  return 0;
}

// The layers, in a child whose working directory is `rootfs` (fchdir changes every thread's).
void apply_layers_in_child(const ImageRef& image, const std::vector<fs::path>& layers, const fs::path& rootfs) {
  const int dir = ::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) refuse(image, fmt::format("cannot open {}: {}", rootfs.string(), std::strerror(errno)));
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    ::close(dir);
    refuse(image, "cannot make a pipe");
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(pipe_fds[0]);
    // Layer names are UTF-8 (PAX headers): in the "C" locale libarchive cannot convert a
    // non-ASCII one and refuses the entry. This process only, not the caller's.
    ::setlocale(LC_CTYPE, "C.UTF-8");
    if (::fchdir(dir) != 0) ::_exit(1);
    ::_exit(apply_layers(layers, pipe_fds[1]));
  }
  ::close(dir);
  ::close(pipe_fds[1]);
  std::string why;
  std::array<char, 4096> buffer{};
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer.data(), buffer.size())) > 0;) why.append(buffer.data(), got);
  ::close(pipe_fds[0]);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    refuse(image, why.empty() ? "unpacking its layers failed" : why);
  }
}

}  // namespace

std::string oci_manifest_digest(const ImageRef& image) {
  std::string index;
  if (image.kind == ImageRef::Kind::oci_archive) {
    index = archive_index(image);
  } else if (image.kind == ImageRef::Kind::oci_layout) {
    index = read_text(image.path / "index.json", kMaxJson);
  } else {
    refuse(image, "is no OCI layout or archive");
  }
  const auto digest = manifest_digest_in(image, index);
  blob_path(digest);  // a digest dlx can name a blob by
  return digest;
}

void unpack_oci_image(const ImageRef& image, const fs::path& rootfs, const fs::path& scratch) {
  fs::path layout = image.path;
  if (image.kind == ImageRef::Kind::oci_archive) {
    layout = scratch / "layout";
    extract_archive_blobs(image, layout);
  }
  const auto digest = oci_manifest_digest(image);
  const auto checked_blob = [&](const std::string& blob_digest) {
    const auto path = layout / blob_path(blob_digest);
    std::error_code absent;
    if (!fs::is_regular_file(path, absent)) refuse(image, fmt::format("the blob {} is missing", blob_digest));
    if (sha256_of(path) != blob_digest) refuse(image, fmt::format("the blob {} does not match its digest", blob_digest));
    return path;
  };
  const auto manifest = nlohmann::json::parse(read_text(checked_blob(digest), kMaxJson), nullptr, false);
  if (!manifest.is_object() || !manifest.contains("layers") || !manifest["layers"].is_array()) {
    refuse(image, "its manifest lists no layers");
  }
  std::vector<fs::path> layers;
  for (const auto& layer : manifest["layers"]) layers.push_back(checked_blob(layer.value("digest", "")));
  apply_layers_in_child(image, layers, rootfs);
}

}  // namespace dlx::container
