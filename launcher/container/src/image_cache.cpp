// SPDX-License-Identifier: Apache-2.0
#include "dlx/container/image_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends.hpp"
#include "dlx/common/directories.hpp"
#include "dlx/common/durable_file.hpp"
#include "dlx/common/file_lock.hpp"
#include "dlx/common/host_name.hpp"
#include "dlx/common/unique_fd.hpp"
#include "dlx/container/oci_image.hpp"
#include "dlx/container/runtime.hpp"

namespace dlx::container {

namespace fs = std::filesystem;

namespace {

// The cache directory as the user's own real directory, closed to others.
void check_own_directory(const fs::path& dir) {
  create_directories_with_mode(dir, 0700);
  struct stat status {};
  if (::lstat(dir.c_str(), &status) != 0 || !S_ISDIR(status.st_mode)) {
    throw ContainerError(fmt::format("the image cache {} is no directory", dir.string()));
  }
  if (status.st_uid != ::getuid() || (status.st_mode & 0077) != 0) {
    throw ContainerError(fmt::format("the image cache {} is not yours alone (owner uid {}, mode {:o}): another user "
                                     "could replace the images you run (remove it, or name another image_cache)",
                                     dir.string(), status.st_uid, status.st_mode & 07777));
  }
}

bool complete(const fs::path& entry) {
  std::error_code absent;
  return fs::is_directory(entry / "rootfs", absent) && fs::is_regular_file(entry / "image.json", absent);
}

}  // namespace

void remove_image_tree(const fs::path& dir) noexcept {
  std::error_code error;
  const auto status = fs::symlink_status(dir, error);
  if (error || !fs::exists(status)) return;
  if (fs::is_directory(status) && !fs::is_symlink(status)) {
    ::chmod(dir.c_str(), 0700);
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      remove_image_tree(it->path());
    }
  }
  fs::remove(dir, error);
}

CachedImage cached_rootfs(const ImageRef& image, const fs::path& cache_dir, std::FILE* log) {
  check_own_directory(cache_dir);
  CachedImage cached;
  cached.digest = oci_manifest_digest(image);
  const auto hex = cached.digest.substr(cached.digest.find(':') + 1);
  cached.dir = cache_dir / hex;
  if (complete(cached.dir)) return cached;  // the common case: no lock taken
  const auto lock = detail::lock_exclusively(cache_dir / (hex + ".lock"));
  if (complete(cached.dir)) return cached;  // converted by the trial we waited for
  // Conversions that were killed (their holder's lock is gone, so none is under way).
  std::error_code error;
  for (fs::directory_iterator it(cache_dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind(hex + ".partial-", 0) == 0) remove_image_tree(it->path());
  }
  remove_image_tree(cached.dir);  // a complete-looking but unfinished entry cannot be: rename is atomic
  const auto started = std::chrono::steady_clock::now();
  const auto partial = cache_dir / fmt::format("{}.partial-{}-{}", hex, host_name(), ::getpid());
  create_directories_with_mode(partial / "rootfs", 0700);
  create_directories_with_mode(partial / "scratch", 0700);
  try {
    unpack_oci_image(image, partial / "rootfs", partial / "scratch");
    remove_image_tree(partial / "scratch");
    cached.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const nlohmann::json info{{"digest", cached.digest}, {"source", image.text}, {"seconds", cached.seconds}};
    write_file_durably(partial / "image.json", info.dump(2) + "\n", 0600);
    fsync_directory(partial);
    fs::rename(partial, cached.dir);
    fsync_directory(cache_dir);
  } catch (...) {
    remove_image_tree(partial);
    throw;
  }
  cached.converted = true;
  if (log) {
    fmt::print(log, "dlx-launch: image {} ({}) converted once, in {:.1f} s, to {}\n", image.text, cached.digest,
               cached.seconds, cached.dir.string());
    std::fflush(log);
  }
  return cached;
}

}  // namespace dlx::container
